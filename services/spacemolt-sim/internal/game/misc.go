package game

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Jettison, ship listing, station facilities, the catalog and the version: the rest of the play recorded real
// sessions use, kept as simple as the simulator's world.

// Jettison dumps cargo into space (one tick). The container it leaves is not simulated: nobody can loot it.
func (e *Engine) Jettison(ctx context.Context, sid, item string, qty int) (any, error) {
	return e.submit(ctx, sid, command{name: "jettison", item: item, qty: qty})
}

func (e *Engine) doJettison(p *Player, item string, qty int) (any, error) {
	if qty < 1 {
		return nil, errorf(CodeInvalidPayload, "quantity must be at least 1. Example: {\"item_id\": \"iron_ore\", \"quantity\": 10}")
	}
	it, ok := resolveItem(item)
	have := 0
	if ok {
		have = p.cargo[it.ID]
	}
	if have == 0 {
		return nil, errorf(CodeItemNotAvailable, "You have no %s in your cargo. Example: {\"item_id\": \"iron_ore\", \"quantity\": 10}", item)
	}
	n := min(qty, have)
	p.cargo[it.ID] -= n
	if p.cargo[it.ID] == 0 {
		delete(p.cargo, it.ID)
	}
	used := p.cargoUsed()
	return &JettisonResult{
		Action: "jettison", ItemID: it.ID, ItemName: it.Name, Quantity: n, CargoUsed: used,
		CargoSpace: p.ship.CargoMax - used,
	}, nil
}

// ListShips answers list_ships: the one ship a simulated player owns.
func (e *Engine) ListShips(sid string) (*ListShipsResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	st := p.snapshot()
	p.mu.Unlock()
	loc, baseID := "in transit", ""
	if poi := w.poi(st.poiID); poi != nil {
		loc = poi.Name
		if st.dockedAt != "" {
			loc, baseID = poi.Base.Name, st.dockedAt
		}
	}
	s := st.ship
	return &ListShipsResult{
		Ships: []ListedShip{{
			ShipID: s.ID, ClassID: s.Class, ClassName: s.Name, IsActive: true, Location: loc, LocationBaseID: baseID,
			Hull: fmt.Sprintf("%d/%d", s.Hull, s.HullMax), Fuel: fmt.Sprintf("%d/%d", s.Fuel, s.FuelMax),
			CargoUsed: st.cargoUsed(), Modules: len(starterModules),
		}},
		Count: 1, ActiveShipID: s.ID, ActiveShipClass: s.Class,
	}, nil
}

// Facility answers facility action=list: the station's own services as facilities. No player or faction
// facilities exist in the simulator. No action and help answer the list too (the live server answers its
// documentation there).
func (e *Engine) Facility(sid, action string) (*FacilityListResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	if action != "list" && action != "" && action != "help" {
		return nil, e.count(p, errorf(CodeInvalidPayload, "The simulator implements facility action 'list' only (got %q). Example: {\"action\": \"list\"}", action))
	}
	w := e.w()
	p.mu.Lock()
	b, err := dockedBase(w, p, "list its facilities")
	p.mu.Unlock()
	if err != nil {
		return nil, e.count(p, err)
	}
	res := &FacilityListResult{BaseID: b.ID, StationFacilities: []FacilityView{}, PlayerFacilities: []FacilityView{}, FactionFacilities: []FacilityView{}}
	for _, svc := range b.services() {
		name, desc := facilityNames[svc][0], facilityNames[svc][1]
		res.StationFacilities = append(res.StationFacilities, FacilityView{
			FacilityID: b.ID + "_" + svc, Type: svc + "_service", Name: name, Category: "service", Description: desc,
			Active: true, MaintenanceSatisfied: true, Service: svc,
		})
	}
	return res, nil
}

var facilityNames = map[string][2]string{
	"fuel":   {"Fuel Depot", "Sells fuel to docked ships (refuel)."},
	"repair": {"Repair Bay", "Repairs hull damage."},
	"market": {"Exchange", "The station's order book (buy, sell, create_buy_order, create_sell_order)."},
}

// catalogTypes are catalog's type values; the simulator lists items only, the others answer empty.
var catalogTypes = []string{"ships", "skills", "recipes", "items"}

// CatalogQuery is catalog's filters.
type CatalogQuery struct {
	Type, ID, Category, Search string
	Page, PageSize             int
}

// CatalogFor answers catalog: the simulator's items (ores) and its one ship class, filtered and paged.
func (e *Engine) CatalogFor(q CatalogQuery) (*CatalogResult, error) {
	if !slices.Contains(catalogTypes, q.Type) {
		return nil, errorf(CodeInvalidPayload, "type must be one of %s. Example: {\"type\": \"items\"}", strings.Join(catalogTypes, ", "))
	}
	if q.PageSize <= 0 {
		q.PageSize = 20
	}
	q.Page, q.PageSize = max(1, q.Page), min(q.PageSize, 50)
	var all []CatalogItem
	switch q.Type {
	case "items":
		for _, it := range itemCatalog {
			all = append(all, CatalogItem{ID: it.ID, Name: it.Name, Category: "ore",
				Description: fmt.Sprintf("Raw ore. Base value %d cr, size %d.", it.GuidePrice, itemSize)})
		}
	case "ships":
		all = append(all, CatalogItem{ID: "theoria", Name: "Theoria", Category: "Industrial",
			Description: "The starter mining ship: hull 100, fuel 100, cargo 70, speed 1."})
	}
	res := &CatalogResult{Type: q.Type, Page: q.Page, PageSize: q.PageSize, Items: []CatalogItem{}}
	for _, c := range all {
		if q.ID != "" && c.ID != q.ID {
			continue
		}
		if q.Category != "" && !strings.EqualFold(c.Category, q.Category) {
			continue
		}
		if s := strings.ToLower(q.Search); s != "" && !strings.Contains(strings.ToLower(c.Name+" "+c.Description), s) {
			continue
		}
		res.Total++
		if res.Total > (q.Page-1)*q.PageSize && len(res.Items) < q.PageSize {
			res.Items = append(res.Items, c)
		}
	}
	res.TotalPages = max(1, (res.Total+q.PageSize-1)/q.PageSize)
	res.Message = fmt.Sprintf("%d %s (page %d of %d).", res.Total, q.Type, q.Page, res.TotalPages)
	return res, nil
}

// Catalog lists the tradeable items (spacemolt_catalog type=items).
func (e *Engine) Catalog() *CatalogResult {
	res, _ := e.CatalogFor(CatalogQuery{Type: "items", PageSize: 50})
	return res
}

// SimVersion is the game version the simulator reports, and its one release note.
const SimVersion = "0.554.0-sim"

// Version answers get_version.
func (e *Engine) Version() *VersionResult {
	notes := []string{"Offline simulator of SpaceMolt for Zoea: the starter loop, missions, exchange orders; no combat or crafting."}
	return &VersionResult{
		Version: SimVersion, ReleaseDate: "2026-12-02", Notes: notes,
		Versions: []VersionEntry{{Version: SimVersion, ReleaseDate: "2026-12-02", Notes: notes}},
		Page:     1, PerPage: 5, Total: 1, TotalPages: 1,
	}
}
