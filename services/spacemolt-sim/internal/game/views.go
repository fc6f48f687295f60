package game

// The view types below are the result shapes of SpaceMolt's legacy MCP tools.
// They are the game's published protocol, so they carry their JSON names here
// rather than in every adapter.

// PlayerView is the player block of get_status, login and register, on the names and types of the published v1
// description (docs/SPACEMOLT.md, "State reads"). Login and register also carry experience and skill_xp; get_status
// leaves skill_xp out. InTransit and Transit are the simulator's own: they appear only while a move is under way.
type PlayerView struct {
	ID             string          `json:"id"`
	Username       string          `json:"username"`
	Empire         string          `json:"empire"`
	Credits        int             `json:"credits"`
	CurrentSystem  string          `json:"current_system"`
	CurrentPOI     string          `json:"current_poi"`
	CurrentShipID  string          `json:"current_ship_id"`
	HomeBase       string          `json:"home_base"`
	DockedAtBase   string          `json:"docked_at_base,omitempty"`
	CreatedAt      string          `json:"created_at"`
	LastActiveAt   string          `json:"last_active_at"`
	LastLoginAt    string          `json:"last_login_at"`
	LastChatCheck  string          `json:"last_chat_check"`
	Anonymous      bool            `json:"anonymous"`
	IsCloaked      bool            `json:"is_cloaked"`
	ClanTag        string          `json:"clan_tag"`
	PrimaryColor   string          `json:"primary_color"`
	SecondaryColor string          `json:"secondary_color"`
	StatusMessage  string          `json:"status_message"`
	RevealedPOIs   map[string]bool `json:"revealed_pois"`
	Skills         map[string]int  `json:"skills"`
	SkillXP        *map[string]int `json:"skill_xp,omitempty"` // login and register only
	Experience     int             `json:"experience"`
	Stats          PlayerStatsView `json:"stats"`
	InTransit      bool            `json:"in_transit,omitempty"`
	Transit        *TransitView    `json:"transit,omitempty"`
}

// PlayerStatsView is the player's lifetime counters. The simulator counts what it plays (credits, ore, trades,
// distance, systems); the rest stay 0 because nothing in the simulator can change them.
type PlayerStatsView struct {
	CreditsEarned    int `json:"credits_earned"`
	CreditsSpent     int `json:"credits_spent"`
	OreMined         int `json:"ore_mined"`
	DistanceTraveled int `json:"distance_traveled"`
	TimePlayed       int `json:"time_played"`
	TradesCompleted  int `json:"trades_completed"`
	ItemsCrafted     int `json:"items_crafted"`
	SystemsExplored  int `json:"systems_explored"`
	ShipsDestroyed   int `json:"ships_destroyed"`
	ShipsLost        int `json:"ships_lost"`
	PiratesDestroyed int `json:"pirates_destroyed"`
	BasesDestroyed   int `json:"bases_destroyed"`
}

// TransitView describes a travel or jump in progress (the simulator's own block).
type TransitView struct {
	Type             string `json:"type"`
	FromSystem       string `json:"from_system"`
	FromPOI          string `json:"from_poi,omitempty"`
	ToSystem         string `json:"to_system"`
	ToPOI            string `json:"to_poi"`
	TicksRemaining   int64  `json:"ticks_remaining"`
	ArrivesInSeconds int    `json:"arrives_in_seconds"`
}

// ShipView is a ship's condition, as the v1 description's ship object names it. Modules lists the installed
// modules' ids; the modules themselves are the result's top-level modules.
type ShipView struct {
	ID             string          `json:"id"`
	OwnerID        string          `json:"owner_id"`
	ClassID        string          `json:"class_id"`
	Name           string          `json:"name"`
	CreatedAt      string          `json:"created_at"`
	Hull           int             `json:"hull"`
	MaxHull        int             `json:"max_hull"`
	Shield         int             `json:"shield"`
	MaxShield      int             `json:"max_shield"`
	ShieldRecharge int             `json:"shield_recharge"`
	Armor          int             `json:"armor"`
	Fuel           int             `json:"fuel"`
	MaxFuel        int             `json:"max_fuel"`
	Speed          int             `json:"speed"`
	CargoUsed      int             `json:"cargo_used"`
	CargoCapacity  int             `json:"cargo_capacity"`
	CPUCapacity    int             `json:"cpu_capacity"`
	CPUUsed        int             `json:"cpu_used"`
	PowerCapacity  int             `json:"power_capacity"`
	PowerUsed      int             `json:"power_used"`
	WeaponSlots    int             `json:"weapon_slots"`
	DefenseSlots   int             `json:"defense_slots"`
	UtilitySlots   int             `json:"utility_slots"`
	Modules        []string        `json:"modules"`
	Cargo          []ShipCargoItem `json:"cargo"`
	DockedAtBase   string          `json:"docked_at_base,omitempty"`
}

// ShipCargoItem is one stack in ship.cargo.
type ShipCargoItem struct {
	ItemID   string `json:"item_id"`
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
	Size     int    `json:"size"`
}

// ModuleView is an installed ship module.
type ModuleView struct {
	ID           string  `json:"id"`
	TypeID       string  `json:"type_id"`
	Name         string  `json:"name"`
	Type         string  `json:"type"`
	Size         int     `json:"size"`
	CPUUsage     int     `json:"cpu_usage"`
	PowerUsage   int     `json:"power_usage"`
	Quality      float64 `json:"quality"`
	QualityGrade string  `json:"quality_grade"`
	Wear         float64 `json:"wear"`
	WearStatus   string  `json:"wear_status"`
	MiningPower  int     `json:"mining_power,omitempty"`
	CargoBonus   int     `json:"cargo_bonus,omitempty"`
	MaxFuelBonus int     `json:"max_fuel_bonus,omitempty"`
}

// StatusResult answers get_status.
type StatusResult struct {
	Player  PlayerView   `json:"player"`
	Ship    ShipView     `json:"ship"`
	Modules []ModuleView `json:"modules"`
}

// ShipResult answers get_ship; CargoMax and CargoUsed repeat the hold at the top level, as the real result does.
type ShipResult struct {
	Ship      ShipView     `json:"ship"`
	Modules   []ModuleView `json:"modules"`
	CargoUsed int          `json:"cargo_used"`
	CargoMax  int          `json:"cargo_max"`
}

// CargoItem is one stack in the hold.
type CargoItem struct {
	ItemID   string `json:"item_id"`
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
	Size     int    `json:"size"`
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

// POIBrief is a POI in a system listing (get_system's pois, login's poi). Online counts the players there.
type POIBrief struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	HasBase  bool     `json:"has_base"`
	BaseID   string   `json:"base_id,omitempty"`
	BaseName string   `json:"base_name,omitempty"`
	Online   int      `json:"online"`
	Position Position `json:"position"`
}

// SystemView is a system's detail.
type SystemView struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	Empire         string           `json:"empire"`
	SecurityStatus string           `json:"security_status"`
	PoliceLevel    int              `json:"police_level"`
	Connections    []ConnectionView `json:"connections"`
	POIs           []POIBrief       `json:"pois"`
}

// Position is a coordinate (light years for systems, AU for POIs).
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// SystemResult answers get_system. In hyperspace it is the transit form: in_transit, transit_type, from_system,
// to_system, ticks_remaining and message instead of system.
type SystemResult struct {
	Action         string      `json:"action"`
	System         *SystemView `json:"system,omitempty"`
	SecurityStatus string      `json:"security_status,omitempty"`
	POI            *POIBrief   `json:"poi,omitempty"`
	TransitForm
}

// TransitForm is the in-transit form shared by get_system and get_poi; all of it is absent when not moving.
type TransitForm struct {
	InTransit      bool   `json:"in_transit,omitempty"`
	TransitType    string `json:"transit_type,omitempty"`
	FromSystem     string `json:"from_system,omitempty"`
	FromPOI        string `json:"from_poi,omitempty"`
	ToSystem       string `json:"to_system,omitempty"`
	ToPOI          string `json:"to_poi,omitempty"`
	TicksRemaining *int64 `json:"ticks_remaining,omitempty"`
	Message        string `json:"message,omitempty"`
}

// POIView is a POI's detail.
type POIView struct {
	ID          string   `json:"id"`
	SystemID    string   `json:"system_id"`
	Type        string   `json:"type"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Position    Position `json:"position"`
	BaseID      string   `json:"base_id,omitempty"`
}

// ResourceView is a deposit as seen by players.
type ResourceView struct {
	ResourceID       string  `json:"resource_id"`
	Name             string  `json:"name"`
	Richness         int     `json:"richness"`
	Remaining        int     `json:"remaining"`
	MaxRemaining     int     `json:"max_remaining"`
	RemainingDisplay string  `json:"remaining_display"`
	DepletionPercent float64 `json:"depletion_percent"`
}

// BaseView is a dockable base.
type BaseView struct {
	ID           string   `json:"id"`
	POIID        string   `json:"poi_id"`
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	Description  string   `json:"description"`
	Empire       string   `json:"empire,omitempty"`
	DefenseLevel int      `json:"defense_level"`
	HasDrones    bool     `json:"has_drones"`
	PublicAccess bool     `json:"public_access"`
	Facilities   []string `json:"facilities"`
}

// POIResult answers get_poi; in transit it is the transit form instead of poi.
type POIResult struct {
	POI       *POIView       `json:"poi,omitempty"`
	Base      *BaseView      `json:"base,omitempty"`
	Resources []ResourceView `json:"resources,omitempty"`
	Services  []string       `json:"services,omitempty"`
	Action    string         `json:"action,omitempty"`
	TransitForm
}

// NearbyPlayer is another ship at the same POI.
type NearbyPlayer struct {
	PlayerID       string `json:"player_id"`
	Username       string `json:"username"`
	ShipClass      string `json:"ship_class"`
	ShipName       string `json:"ship_name"`
	Anonymous      bool   `json:"anonymous"`
	InCombat       bool   `json:"in_combat"`
	PrimaryColor   string `json:"primary_color"`
	SecondaryColor string `json:"secondary_color"`
}

// NearbyResult answers get_nearby. Nearby lists at most NearbyListCap ships; Count is the total.
type NearbyResult struct {
	POIID       string         `json:"poi_id"`
	Nearby      []NearbyPlayer `json:"nearby"`
	Count       int            `json:"count"`
	Pirates     []any          `json:"pirates"`
	PirateCount int            `json:"pirate_count"`
}

// NearbyListCap bounds get_nearby so a crowded belt stays a small result.
const NearbyListCap = 50

// MapSystem is one system in get_map. The real result names only system_id and name; the simulator's map also
// carries each system's layout (docs/SPACEMOLT.md lists this as a difference).
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
	TotalCount    int         `json:"total_count"`
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
	TargetSystem  string      `json:"target_system"`
	Route         []RouteStep `json:"route"`
	TotalJumps    int         `json:"total_jumps"`
	EstimatedFuel int         `json:"estimated_fuel"`
	FuelPerJump   int         `json:"fuel_per_jump"`
	FuelAvailable int         `json:"fuel_available"`
	CargoUsed     int         `json:"cargo_used"`
	Message       string      `json:"message"`
}

// MarketItem is one item line of view_market. BestBuy is the best price the
// station pays (what a sell earns); BestSell is the best price it asks.
// buy_price/buy_quantity repeat best_buy and the bids' volume, sell_price/sell_quantity best_sell and the asks'.
type MarketItem struct {
	ItemID       string  `json:"item_id"`
	ItemName     string  `json:"item_name"`
	Category     string  `json:"category"`
	BestBuy      int     `json:"best_buy"`
	BuyPrice     int     `json:"buy_price"`
	BuyQuantity  int     `json:"buy_quantity"`
	BestSell     int     `json:"best_sell"`
	SellPrice    int     `json:"sell_price"`
	SellQuantity int     `json:"sell_quantity"`
	Spread       int     `json:"spread,omitempty"`
	BuyOrders    []Order `json:"buy_orders"`
	SellOrders   []Order `json:"sell_orders"`
}

// Order is a price level of the book.
type Order struct {
	PriceEach int    `json:"price_each"`
	Quantity  int    `json:"quantity"`
	Source    string `json:"source"`
}

// MarketResult answers view_market.
type MarketResult struct {
	Action string       `json:"action"`
	Base   string       `json:"base"`
	BaseID string       `json:"base_id"`
	Items  []MarketItem `json:"items"`
}

// TravelResult answers travel, at arrival. OnlinePlayers are the other ships at the destination.
type TravelResult struct {
	// AutoUndocked: the player was docked and the server undocked it first, in the same tick (an envelope flag the
	// live server sets on every response that changed the dock state on its own).
	AutoUndocked           bool           `json:"auto_undocked,omitempty"`
	Action                 string         `json:"action"`
	POI                    string         `json:"poi"`
	POIID                  string         `json:"poi_id"`
	OnlinePlayers          []NearbyPlayer `json:"online_players"`
	OnlinePlayersCount     int            `json:"online_players_count"`
	OnlinePlayersTruncated bool           `json:"online_players_truncated"`
}

// PendingResult answers jump, dock and mine. The real server answers pending=true and reports the outcome later;
// the simulator's call returns at the outcome, so pending is false and message says what happened.
type PendingResult struct {
	Command string `json:"command"`
	Pending bool   `json:"pending"`
	Message string `json:"message"`
}

// JumpResult answers jump, at arrival.
type JumpResult struct {
	PendingResult
}

// DockResult answers dock.
type DockResult struct {
	PendingResult
}

// UndockResult answers undock.
type UndockResult struct {
	Action string `json:"action"`
}

// MineResult answers mine. The yield fields are the simulator's own: the real server reports the yield in a later
// notification, the simulator in the answer (docs/SPACEMOLT.md).
type MineResult struct {
	PendingResult
	// AutoUndocked: mined while docked; the server undocked first, in the same tick.
	AutoUndocked  bool   `json:"auto_undocked,omitempty"`
	ResourceID    string `json:"resource_id"`
	Name          string `json:"name"`
	Quantity      int    `json:"quantity"`
	Remaining     int    `json:"remaining"`
	CargoUsed     int    `json:"cargo_used"`
	CargoCapacity int    `json:"cargo_capacity"`
}

// SellResult answers sell.
type SellResult struct {
	// AutoDocked: the player was at the station undocked; the server docked it first (the live envelope flag).
	AutoDocked   bool   `json:"auto_docked,omitempty"`
	Action       string `json:"action"`
	Item         string `json:"item"`
	ItemID       string `json:"item_id"`
	QuantitySold int    `json:"quantity_sold"`
	TotalEarned  int    `json:"total_earned"`
	Fills        []Fill `json:"fills"`
	Unsold       int    `json:"unsold"`
	LevelUp      bool   `json:"level_up"`
	Message      string `json:"message"`
}

// BuyResult answers buy.
type BuyResult struct {
	// AutoDocked: the player was at the station undocked; the server docked it first (the live envelope flag).
	AutoDocked       bool   `json:"auto_docked,omitempty"`
	Action           string `json:"action"`
	Item             string `json:"item"`
	ItemID           string `json:"item_id"`
	Quantity         int    `json:"quantity"`
	TotalCost        int    `json:"total_cost"`
	Fills            []Fill `json:"fills"`
	DeliveredToCargo int    `json:"delivered_to_cargo"`
	LevelUp          bool   `json:"level_up"`
	Message          string `json:"message"`
}

// RefuelResult answers refuel at a station: fuel and fuel_now are the tank after it, source is "credits".
type RefuelResult struct {
	// AutoDocked: the player was at the station undocked; the server docked it first (the live envelope flag).
	AutoDocked bool   `json:"auto_docked,omitempty"`
	Action     string `json:"action"`
	Source     string `json:"source"`
	Fuel       int    `json:"fuel"`
	FuelNow    int    `json:"fuel_now"`
	FuelMax    int    `json:"fuel_max"`
	Cost       int    `json:"cost"`
}

// LogEntryView is one captain's log entry in login's captains_log.
type LogEntryView struct {
	Index     int    `json:"index"`
	Entry     string `json:"entry"`
	CreatedAt string `json:"created_at"`
}

// RegisterResult answers register; Password is shown only here. SessionID is the simulator's own (the runner and
// the MCP binding read it; the real server keeps the session in the envelope).
type RegisterResult struct {
	Password  string     `json:"password"`
	PlayerID  string     `json:"player_id"`
	Player    PlayerView `json:"player"`
	Ship      ShipView   `json:"ship"`
	System    SystemView `json:"system"`
	POI       POIBrief   `json:"poi"`
	SessionID string     `json:"session_id"`
	Message   string     `json:"message"`
}

// LoginResult answers login. In transit, system and poi are the destination's.
type LoginResult struct {
	Player        PlayerView     `json:"player"`
	Ship          ShipView       `json:"ship"`
	System        SystemView     `json:"system"`
	POI           POIBrief       `json:"poi"`
	CaptainsLog   []LogEntryView `json:"captains_log"`
	PendingTrades []any          `json:"pending_trades"`
	SessionID     string         `json:"session_id"`
	Message       string         `json:"message"`
}

// OKResult answers calls with nothing else to say (logout).
type OKResult struct {
	Message string `json:"message"`
}

// LogAddResult answers captains_log_add.
type LogAddResult struct {
	Index      int    `json:"index"`
	CreatedAt  string `json:"created_at"`
	TotalCount int    `json:"total_count"`
	Message    string `json:"message"`
}

// LogListResult answers captains_log_list; Entry is nil when the log is empty.
type LogListResult struct {
	Entry      *LogEntryView `json:"entry"`
	Index      int           `json:"index"`
	TotalCount int           `json:"total_count"`
	MaxEntries int           `json:"max_entries"`
	HasNext    bool          `json:"has_next"`
	HasPrev    bool          `json:"has_prev"`
}

// ChatResult answers chat.
type ChatResult struct {
	Action     string `json:"action"`
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
	// Commands lists the tools (v1 help without a topic; the MCP layer fills it).
	Commands []HelpCommand `json:"commands,omitempty"`
}

// HelpCommand is one tool in help's commands.
type HelpCommand struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	IsMutation   bool   `json:"is_mutation"`
	RequiresAuth bool   `json:"requires_auth"`
}

// CatalogResult answers catalog (spacemolt_catalog on v2).
type CatalogResult struct {
	Type       string        `json:"type"`
	Items      []CatalogItem `json:"items"`
	Total      int           `json:"total"`
	Page       int           `json:"page"`
	PageSize   int           `json:"page_size"`
	TotalPages int           `json:"total_pages"`
	Message    string        `json:"message"`
}

// CatalogItem is one catalog entry.
type CatalogItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Category    string `json:"category,omitempty"`
	Description string `json:"description,omitempty"`
}
