package game

// Results of the missions, exchange-order, jettison, ship-listing, facility and version actions, on the published
// v1 names (docs/SPACEMOLT.md); optional fields carry omitempty.

// MissionsResult answers get_missions.
type MissionsResult struct {
	BaseID   string         `json:"base_id"`
	BaseName string         `json:"base_name"`
	Missions []MissionOffer `json:"missions"`
}

// MissionOffer is one contract on a board.
type MissionOffer struct {
	MissionID         string             `json:"mission_id"`
	TemplateID        string             `json:"template_id,omitempty"`
	Type              string             `json:"type"`
	Title             string             `json:"title"`
	Description       string             `json:"description"`
	Difficulty        int                `json:"difficulty"`
	ExpiresInTicks    int                `json:"expires_in_ticks"`
	Giver             *MissionGiver      `json:"giver,omitempty"`
	Objectives        []MissionObjective `json:"objectives,omitempty"`
	Rewards           MissionRewards     `json:"rewards"`
	Repeatable        bool               `json:"repeatable,omitempty"`
	IssuingBase       string             `json:"issuing_base,omitempty"`
	IssuingBaseID     string             `json:"issuing_base_id,omitempty"`
	IssuingSystemID   string             `json:"issuing_system_id,omitempty"`
	IssuingSystemName string             `json:"issuing_system_name,omitempty"`
}

// MissionGiver is the NPC offering a contract.
type MissionGiver struct {
	Name  string `json:"name"`
	Title string `json:"title"`
}

// MissionObjective is one goal of an offered contract.
type MissionObjective struct {
	Type           string `json:"type"`
	Description    string `json:"description"`
	ItemID         string `json:"item_id,omitempty"`
	Quantity       int    `json:"quantity,omitempty"`
	SystemID       string `json:"system_id,omitempty"`
	SystemName     string `json:"system_name,omitempty"`
	TargetBaseID   string `json:"target_base_id,omitempty"`
	TargetBaseName string `json:"target_base_name,omitempty"`
}

// MissionRewards is what a contract pays.
type MissionRewards struct {
	Credits int `json:"credits"`
}

// AcceptMissionResult answers accept_mission.
type AcceptMissionResult struct {
	MissionID  string `json:"mission_id"`
	TemplateID string `json:"template_id,omitempty"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	ExpiresAt  string `json:"expires_at"`
	Message    string `json:"message"`
}

// CompleteMissionResult answers complete_mission.
type CompleteMissionResult struct {
	MissionID     string `json:"mission_id"`
	Title         string `json:"title"`
	CreditsEarned int    `json:"credits_earned"`
	Message       string `json:"message"`
}

// ActiveMissionsResult answers get_active_missions.
type ActiveMissionsResult struct {
	Missions    []ActiveMissionView `json:"missions"`
	TotalCount  int                 `json:"total_count"`
	MaxMissions int                 `json:"max_missions"`
}

// ActiveMissionView is one accepted contract with its progress.
type ActiveMissionView struct {
	MissionID         string            `json:"mission_id"`
	TemplateID        string            `json:"template_id,omitempty"`
	Type              string            `json:"type"`
	Title             string            `json:"title"`
	Description       string            `json:"description"`
	Difficulty        int               `json:"difficulty"`
	AcceptedAt        string            `json:"accepted_at"`
	ExpiresInTicks    int               `json:"expires_in_ticks"`
	Giver             *MissionGiver     `json:"giver,omitempty"`
	IssuingBase       string            `json:"issuing_base"`
	IssuingBaseID     string            `json:"issuing_base_id,omitempty"`
	IssuingSystemID   string            `json:"issuing_system_id,omitempty"`
	IssuingSystemName string            `json:"issuing_system_name,omitempty"`
	Objectives        []ActiveObjective `json:"objectives,omitempty"`
	PercentComplete   float64           `json:"percent_complete"`
	Rewards           MissionRewards    `json:"rewards"`
}

// ActiveObjective is one goal of an accepted contract.
type ActiveObjective struct {
	Type           string `json:"type"`
	Description    string `json:"description"`
	Current        int    `json:"current"`
	Required       int    `json:"required"`
	Completed      bool   `json:"completed"`
	ItemID         string `json:"item_id,omitempty"`
	ItemName       string `json:"item_name,omitempty"`
	InCargo        int    `json:"in_cargo,omitempty"`
	SystemID       string `json:"system_id,omitempty"`
	SystemName     string `json:"system_name,omitempty"`
	TargetBase     string `json:"target_base,omitempty"`
	TargetBaseName string `json:"target_base_name,omitempty"`
}

// MessageResult is an answer that is only a message (abandon_mission, decline_mission).
type MessageResult struct {
	Message string `json:"message"`
}

// CreateOrderResult answers create_sell_order and create_buy_order.
type CreateOrderResult struct {
	Action string `json:"action"`
	// AutoDocked: the player was at the station undocked; the server docked it first (the live envelope flag).
	AutoDocked       bool   `json:"auto_docked,omitempty"`
	Item             string `json:"item"`
	ItemID           string `json:"item_id"`
	Quantity         int    `json:"quantity"`
	PriceEach        int    `json:"price_each"`
	ListingFee       int    `json:"listing_fee"`
	Message          string `json:"message"`
	OrderID          string `json:"order_id,omitempty"`
	Fills            []Fill `json:"fills"`
	QuantityFilled   int    `json:"quantity_filled"`
	QuantityListed   int    `json:"quantity_listed"`
	TotalEscrowed    *int   `json:"total_escrowed,omitempty"`
	TotalSpent       *int   `json:"total_spent,omitempty"`
	DeliveredToCargo *int   `json:"delivered_to_cargo,omitempty"`
	TotalEarned      *int   `json:"total_earned,omitempty"`
	FromCargo        *int   `json:"from_cargo,omitempty"`
}

// CancelOrderResult answers cancel_order.
type CancelOrderResult struct {
	Action          string         `json:"action"`
	OrderID         string         `json:"order_id"`
	Message         string         `json:"message"`
	ReturnedItems   *ReturnedItems `json:"returned_items,omitempty"`
	ReturnedCredits *int           `json:"returned_credits,omitempty"`
	DeliveredTo     string         `json:"delivered_to,omitempty"`
}

// ReturnedItems is a cancelled sell order's escrow.
type ReturnedItems struct {
	ItemID   string `json:"item_id"`
	Quantity int    `json:"quantity"`
}

// ModifyOrderResult answers modify_order.
type ModifyOrderResult struct {
	Action   string `json:"action"`
	OrderID  string `json:"order_id"`
	OldPrice int    `json:"old_price"`
	NewPrice int    `json:"new_price"`
	Message  string `json:"message"`
}

// ViewOrdersResult answers view_orders.
type ViewOrdersResult struct {
	Action     string      `json:"action"`
	Base       string      `json:"base"`
	Scope      string      `json:"scope"`
	SortBy     string      `json:"sort_by"`
	OrderType  string      `json:"order_type,omitempty"`
	ItemFilter string      `json:"item_filter,omitempty"`
	Orders     []OrderView `json:"orders"`
	Page       int         `json:"page"`
	PageSize   int         `json:"page_size"`
	Total      int         `json:"total"`
	TotalPages int         `json:"total_pages"`
	HasMore    bool        `json:"has_more"`
	Hint       string      `json:"hint"`
}

// OrderView is one of the player's orders.
type OrderView struct {
	OrderID        string `json:"order_id"`
	OrderType      string `json:"order_type"`
	Side           string `json:"side"`
	ItemID         string `json:"item_id"`
	ItemName       string `json:"item_name,omitempty"`
	PriceEach      int    `json:"price_each"`
	Quantity       int    `json:"quantity"`
	FilledQuantity int    `json:"filled_quantity"`
	Remaining      int    `json:"remaining"`
	ListingFee     int    `json:"listing_fee"`
	CreatedAt      string `json:"created_at"`
}

// EstimateResult answers estimate_purchase.
type EstimateResult struct {
	Action            string `json:"action"`
	Item              string `json:"item"`
	QuantityRequested int    `json:"quantity_requested"`
	Available         int    `json:"available"`
	TotalCost         int    `json:"total_cost"`
	Unfilled          int    `json:"unfilled"`
	Fills             []Fill `json:"fills"`
	Message           string `json:"message"`
}

// AnalyzeResult answers analyze_market.
type AnalyzeResult struct {
	Station    string    `json:"station"`
	SkillLevel int       `json:"skill_level"`
	Insights   []Insight `json:"insights"`
	Message    string    `json:"message"`
}

// Insight is one trading hint.
type Insight struct {
	Category string `json:"category"`
	Item     string `json:"item"`
	ItemID   string `json:"item_id"`
	Message  string `json:"message"`
	Priority int    `json:"priority"`
}

// JettisonResult answers jettison.
type JettisonResult struct {
	Action     string `json:"action"`
	ItemID     string `json:"item_id"`
	ItemName   string `json:"item_name"`
	Quantity   int    `json:"quantity"`
	CargoUsed  int    `json:"cargo_used"`
	CargoSpace int    `json:"cargo_space"`
}

// ListShipsResult answers list_ships.
type ListShipsResult struct {
	Ships           []ListedShip `json:"ships"`
	Count           int          `json:"count"`
	ActiveShipID    string       `json:"active_ship_id,omitempty"`
	ActiveShipClass string       `json:"active_ship_class,omitempty"`
}

// ListedShip is one owned ship.
type ListedShip struct {
	ShipID         string `json:"ship_id"`
	ClassID        string `json:"class_id"`
	ClassName      string `json:"class_name,omitempty"`
	IsActive       bool   `json:"is_active"`
	Location       string `json:"location,omitempty"`
	LocationBaseID string `json:"location_base_id,omitempty"`
	Hull           string `json:"hull,omitempty"`
	Fuel           string `json:"fuel,omitempty"`
	CargoUsed      int    `json:"cargo_used"`
	Modules        int    `json:"modules"`
}

// FacilityListResult answers facility action=list.
type FacilityListResult struct {
	BaseID            string         `json:"base_id"`
	StationFacilities []FacilityView `json:"station_facilities"`
	PlayerFacilities  []FacilityView `json:"player_facilities"`
	FactionFacilities []FacilityView `json:"faction_facilities"`
}

// FacilityView is one facility.
type FacilityView struct {
	FacilityID           string `json:"facility_id"`
	Type                 string `json:"type"`
	Name                 string `json:"name"`
	Category             string `json:"category"`
	Description          string `json:"description"`
	Active               bool   `json:"active"`
	MaintenanceSatisfied bool   `json:"maintenance_satisfied"`
	Service              string `json:"service,omitempty"`
}

// VersionResult answers get_version.
type VersionResult struct {
	Version     string         `json:"version"`
	ReleaseDate string         `json:"release_date"`
	Notes       []string       `json:"notes"`
	Versions    []VersionEntry `json:"versions"`
	Page        int            `json:"page"`
	PerPage     int            `json:"per_page"`
	Total       int            `json:"total"`
	TotalPages  int            `json:"total_pages"`
	HasMore     bool           `json:"has_more"`
}

// VersionEntry is one release.
type VersionEntry struct {
	Version     string   `json:"version"`
	ReleaseDate string   `json:"release_date"`
	Notes       []string `json:"notes"`
}
