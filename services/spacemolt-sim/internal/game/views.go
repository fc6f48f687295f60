package game

// The view types below are the result shapes of SpaceMolt's legacy MCP tools.
// They are the game's published protocol, so they carry their JSON names here
// rather than in every adapter.

// PlayerView is the player block of get_status, login and register.
type PlayerView struct {
	ID         string       `json:"id"`
	Username   string       `json:"username"`
	Empire     string       `json:"empire"`
	Credits    int          `json:"credits"`
	SystemID   string       `json:"system_id"`
	SystemName string       `json:"system_name"`
	POIID      *string      `json:"poi_id"`
	POIName    *string      `json:"poi_name"`
	DockedAt   *string      `json:"docked_at"`
	InTransit  bool         `json:"in_transit"`
	Transit    *TransitView `json:"transit,omitempty"`
}

// TransitView describes a travel or jump in progress.
type TransitView struct {
	Type             string `json:"type"`
	FromSystem       string `json:"from_system"`
	FromPOI          string `json:"from_poi,omitempty"`
	ToSystem         string `json:"to_system"`
	ToPOI            string `json:"to_poi"`
	TicksRemaining   int64  `json:"ticks_remaining"`
	ArrivesInSeconds int    `json:"arrives_in_seconds"`
}

// ShipView is a ship's condition.
type ShipView struct {
	ID          string `json:"id"`
	Class       string `json:"class"`
	Name        string `json:"name"`
	Hull        int    `json:"hull"`
	HullMax     int    `json:"hull_max"`
	Shield      int    `json:"shield"`
	ShieldMax   int    `json:"shield_max"`
	Fuel        int    `json:"fuel"`
	FuelMax     int    `json:"fuel_max"`
	CargoUsed   int    `json:"cargo_used"`
	CargoMax    int    `json:"cargo_max"`
	Speed       int    `json:"speed"`
	MiningPower int    `json:"mining_power"`
}

// ModuleView is an installed ship module.
type ModuleView struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Type  string         `json:"type"`
	Stats map[string]int `json:"stats"`
}

// StatusResult answers get_status.
type StatusResult struct {
	Player      PlayerView   `json:"player"`
	Ship        ShipView     `json:"ship"`
	Modules     []ModuleView `json:"modules"`
	CurrentTick int64        `json:"current_tick"`
}

// ShipResult answers get_ship.
type ShipResult struct {
	Ship    ShipView     `json:"ship"`
	Modules []ModuleView `json:"modules"`
}

// CargoItem is one stack in the hold.
type CargoItem struct {
	ItemID   string `json:"item_id"`
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
}

// CargoResult answers get_cargo.
type CargoResult struct {
	Cargo     []CargoItem `json:"cargo"`
	Used      int         `json:"used"`
	Capacity  int         `json:"capacity"`
	Available int         `json:"available"`
}

// ConnectionView is a jump link.
type ConnectionView struct {
	SystemID string `json:"system_id"`
	Name     string `json:"name"`
	Distance int    `json:"distance"`
}

// POIBrief is a POI in a system listing.
type POIBrief struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	HasBase  bool   `json:"has_base"`
	Distance *int   `json:"distance,omitempty"` // AU from the player's POI
}

// SystemView is a system's detail.
type SystemView struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	Empire         string           `json:"empire"`
	SecurityStatus string           `json:"security_status"`
	Position       Position         `json:"position"`
	Connections    []ConnectionView `json:"connections"`
	POIs           []POIBrief       `json:"pois"`
}

// Position is a coordinate (light years for systems, AU for POIs).
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// SystemResult answers get_system; System is nil in hyperspace.
type SystemResult struct {
	System    *SystemView  `json:"system"`
	InTransit bool         `json:"in_transit"`
	Transit   *TransitView `json:"transit,omitempty"`
	Message   string       `json:"message,omitempty"`
}

// POIView is a POI's detail.
type POIView struct {
	ID          string   `json:"id"`
	SystemID    string   `json:"system_id"`
	Type        string   `json:"type"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Position    Position `json:"position"`
}

// ResourceView is a deposit as seen by players.
type ResourceView struct {
	ResourceID string `json:"resource_id"`
	Name       string `json:"name"`
	Richness   int    `json:"richness"`
	Remaining  int    `json:"remaining"`
}

// BaseView is a dockable base.
type BaseView struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Services  []string `json:"services"`
	FuelPrice int      `json:"fuel_price"`
}

// POIResult answers get_poi; POI is nil in transit.
type POIResult struct {
	POI       *POIView       `json:"poi"`
	Resources []ResourceView `json:"resources"`
	Base      *BaseView      `json:"base"`
	Services  []string       `json:"services"`
	InTransit bool           `json:"in_transit"`
	Transit   *TransitView   `json:"transit,omitempty"`
}

// NearbyPlayer is another ship at the same POI.
type NearbyPlayer struct {
	PlayerID  string `json:"player_id"`
	Username  string `json:"username"`
	Empire    string `json:"empire"`
	ShipClass string `json:"ship_class"`
	Docked    bool   `json:"docked"`
}

// NearbyResult answers get_nearby. Players lists at most NearbyListCap ships; Count is the total.
type NearbyResult struct {
	POIID     *string        `json:"poi_id"`
	Players   []NearbyPlayer `json:"players"`
	Pirates   []any          `json:"pirates"`
	Count     int            `json:"count"`
	Truncated bool           `json:"truncated,omitempty"`
}

// NearbyListCap bounds get_nearby so a crowded belt stays a small result.
const NearbyListCap = 50

// MapSystem is one system in get_map.
type MapSystem struct {
	SystemID       string           `json:"system_id"`
	Name           string           `json:"name"`
	Empire         string           `json:"empire"`
	SecurityStatus string           `json:"security_status"`
	Position       Position         `json:"position"`
	Connections    []ConnectionView `json:"connections"`
	POIs           []POIBrief       `json:"pois"`
	HasStation     bool             `json:"has_station"`
	Visited        bool             `json:"visited"`
}

// MapResult answers get_map.
type MapResult struct {
	Systems       []MapSystem `json:"systems"`
	Count         int         `json:"count"`
	CurrentSystem string      `json:"current_system"`
}

// RouteStep is one system on a route.
type RouteStep struct {
	SystemID string `json:"system_id"`
	Name     string `json:"name"`
	Jumps    int    `json:"jumps"`
}

// RouteResult answers find_route.
type RouteResult struct {
	Found         bool        `json:"found"`
	Route         []RouteStep `json:"route"`
	TotalJumps    int         `json:"total_jumps"`
	EstimatedFuel int         `json:"estimated_fuel"`
	Fuel          int         `json:"fuel"`
	Message       string      `json:"message,omitempty"`
}

// MarketItem is one item line of view_market. BestBuy is the best price the
// station pays (what a sell earns); BestSell is the best price it asks.
type MarketItem struct {
	ItemID     string  `json:"item_id"`
	Name       string  `json:"name"`
	GuidePrice int     `json:"guide_price"`
	BestBuy    int     `json:"best_buy"`
	BuyVolume  int     `json:"buy_volume"`
	BestSell   int     `json:"best_sell"`
	SellVolume int     `json:"sell_volume"`
	BuyOrders  []Order `json:"buy_orders,omitempty"`
	SellOrders []Order `json:"sell_orders,omitempty"`
}

// Order is a price level of the book.
type Order struct {
	Price    int `json:"price"`
	Quantity int `json:"quantity"`
}

// MarketResult answers view_market.
type MarketResult struct {
	BaseID string       `json:"base_id"`
	Items  []MarketItem `json:"items"`
}

// TravelResult answers travel, at arrival.
type TravelResult struct {
	POI          string `json:"poi"`
	POIID        string `json:"poi_id"`
	SystemID     string `json:"system_id"`
	FuelUsed     int    `json:"fuel_used"`
	Fuel         int    `json:"fuel"`
	Ticks        int    `json:"ticks"`
	AutoUndocked bool   `json:"auto_undocked,omitempty"`
	Message      string `json:"message"`
}

// JumpResult answers jump, at arrival.
type JumpResult struct {
	FromSystem   string `json:"from_system"`
	SystemID     string `json:"system_id"`
	SystemName   string `json:"system_name"`
	POIID        string `json:"poi_id"`
	FuelUsed     int    `json:"fuel_used"`
	Fuel         int    `json:"fuel"`
	Ticks        int    `json:"ticks"`
	AutoUndocked bool   `json:"auto_undocked,omitempty"`
	Message      string `json:"message"`
}

// DockResult answers dock.
type DockResult struct {
	Base    BaseView `json:"base"`
	POIID   string   `json:"poi_id"`
	Message string   `json:"message"`
}

// UndockResult answers undock.
type UndockResult struct {
	OK      bool   `json:"ok"`
	POIID   string `json:"poi_id"`
	Message string `json:"message"`
}

// MineResult answers mine.
type MineResult struct {
	Kind       string `json:"kind"`
	ResourceID string `json:"resource_id"`
	Name       string `json:"name"`
	Quantity   int    `json:"quantity"`
	Remaining  int    `json:"remaining"`
	CargoUsed  int    `json:"cargo_used"`
	CargoMax   int    `json:"cargo_max"`
	Message    string `json:"message"`
}

// SellResult answers sell.
type SellResult struct {
	ItemID            string `json:"item_id"`
	QuantityRequested int    `json:"quantity_requested"`
	QuantitySold      int    `json:"quantity_sold"`
	TotalEarned       int    `json:"total_earned"`
	Fills             []Fill `json:"fills"`
	Credits           int    `json:"credits"`
	AutoDocked        bool   `json:"auto_docked,omitempty"`
	Message           string `json:"message"`
}

// BuyResult answers buy.
type BuyResult struct {
	ItemID     string `json:"item_id"`
	Quantity   int    `json:"quantity"`
	TotalCost  int    `json:"total_cost"`
	Fills      []Fill `json:"fills"`
	Credits    int    `json:"credits"`
	AutoDocked bool   `json:"auto_docked,omitempty"`
	Message    string `json:"message"`
}

// RefuelResult answers refuel.
type RefuelResult struct {
	Fuel       int    `json:"fuel"`
	FuelMax    int    `json:"fuel_max"`
	FuelAdded  int    `json:"fuel_added"`
	Cost       int    `json:"cost"`
	Credits    int    `json:"credits"`
	AutoDocked bool   `json:"auto_docked,omitempty"`
	Message    string `json:"message"`
}

// RegisterResult answers register; Password is shown only here.
type RegisterResult struct {
	Password  string     `json:"password"`
	PlayerID  string     `json:"player_id"`
	Player    PlayerView `json:"player"`
	Ship      ShipView   `json:"ship"`
	System    string     `json:"system"`
	POI       string     `json:"poi"`
	SessionID string     `json:"session_id"`
	Message   string     `json:"message"`
}

// LoginResult answers login.
type LoginResult struct {
	Player    PlayerView `json:"player"`
	Ship      ShipView   `json:"ship"`
	System    string     `json:"system"`
	POI       *string    `json:"poi"`
	SessionID string     `json:"session_id"`
	Message   string     `json:"message"`
}

// OKResult answers calls with nothing else to say (logout).
type OKResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// LogAddResult answers captains_log_add.
type LogAddResult struct {
	Index      int    `json:"index"`
	TotalCount int    `json:"total_count"`
	Message    string `json:"message"`
}

// LogListResult answers captains_log_list; Entry is nil when the log is empty.
type LogListResult struct {
	Entry      *string `json:"entry"`
	Index      int     `json:"index"`
	TotalCount int     `json:"total_count"`
}

// ChatResult answers chat.
type ChatResult struct {
	SentAt     string `json:"sent_at"`
	Channel    string `json:"channel"`
	Recipients int    `json:"recipients"`
}

// NotificationsResult answers get_notifications.
type NotificationsResult struct {
	Notifications []Notification `json:"notifications"`
	Count         int            `json:"count"`
	Remaining     int            `json:"remaining"`
	CurrentTick   int64          `json:"current_tick"`
	Throttled     bool           `json:"throttled,omitempty"`
	Message       string         `json:"message,omitempty"`
}

// HelpResult answers help.
type HelpResult struct {
	Topic string `json:"topic"`
	Text  string `json:"text"`
}

// CatalogResult answers spacemolt_catalog.
type CatalogResult struct {
	Type  string        `json:"type"`
	Items []CatalogItem `json:"items"`
	Total int           `json:"total"`
}

// CatalogItem is one catalog entry.
type CatalogItem struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Category   string `json:"category"`
	GuidePrice int    `json:"guide_price"`
}
