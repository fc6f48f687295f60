package game

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// Missions, as the live game's station boards offer them, kept simple: every station with a market offers supply
// contracts (deliver N units of an ore to this station) for the ores of its region; they are repeatable, and a
// player holds at most MaxActiveMissions at once. Accept and complete are mutations (one tick); the board, the
// active list, abandon and decline are instant.

// MaxActiveMissions is the live game's limit of accepted missions.
const MaxActiveMissions = 5

// missionOfferTicks is how long an offer shows as open on the board; missionTicks how long an accepted mission
// runs before it expires.
const (
	missionOfferTicks = 8640 // a day at the default tick
	missionTicks      = 2160 // six hours
)

// missionTemplate is one contract a station offers.
type missionTemplate struct {
	id, templateID string
	baseID         string
	title, desc    string
	itemID         string
	qty, reward    int
	difficulty     int
}

// activeMission is a contract a player accepted.
type activeMission struct {
	ID         string    `json:"mission_id"`
	TemplateID string    `json:"template_id"`
	BaseID     string    `json:"base_id"`
	Accepted   time.Time `json:"accepted_at"`
	AcceptTick int64     `json:"accept_tick"`
}

// missionsAt lists the contracts the base offers, in a fixed order: one supply contract per ore its region sells
// well, sized by the ore's value. Ids are derived from the seed, so they survive restarts.
func (e *Engine) missionsAt(w *World, b *Base) []missionTemplate {
	if b == nil || b.Market == nil {
		return nil
	}
	var ores []string
	if b.ID == HomeBase {
		ores = []string{"iron_ore", "copper_ore", "nickel_ore", "titanium_ore"}
	} else {
		poi := w.baseLocation(b.ID)
		for _, p := range w.system(poi.SystemID).POIs {
			for _, d := range p.Deposits {
				if !slices.Contains(ores, d.ResourceID) {
					ores = append(ores, d.ResourceID)
				}
			}
		}
		if len(ores) == 0 {
			ores = []string{"iron_ore"}
		}
		slices.Sort(ores)
	}
	out := make([]missionTemplate, 0, len(ores))
	for _, ore := range ores {
		it, _ := itemByID(ore)
		qty := max(5, min(20, 60/it.GuidePrice)) // a few trips of a starter hold
		tid := "supply_" + ore
		out = append(out, missionTemplate{
			id: e.stableUUID(b.ID + "/" + tid), templateID: tid, baseID: b.ID,
			title:  it.Name + " Supply Run",
			desc:   fmt.Sprintf("%s needs %d %s for its workshops. Deliver it here.", b.Name, qty, it.Name),
			itemID: ore, qty: qty, reward: qty*it.GuidePrice*2 + 50,
			difficulty: 1 + it.GuidePrice/20,
		})
	}
	return out
}

// missionByID finds a contract anywhere in the galaxy by its id.
func (e *Engine) missionByID(w *World, id string) (missionTemplate, bool) {
	for _, s := range w.systems {
		for _, poi := range s.POIs {
			for _, m := range e.missionsAt(w, poi.Base) {
				if m.id == id {
					return m, true
				}
			}
		}
	}
	return missionTemplate{}, false
}

// stableUUID formats a seed-derived hash of key as a UUID.
func (e *Engine) stableUUID(key string) string {
	h := uint64(e.cfg.Seed)
	for _, c := range []byte(key) {
		h = splitmix64(h ^ uint64(c))
	}
	l := splitmix64(h)
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, uint16(l>>48)&0xfff, l&0xffffffffffff)
}

// baseLocation is the POI of a base, nil for an unknown one.
func (w *World) baseLocation(baseID string) *POI {
	for _, s := range w.systems {
		for _, poi := range s.POIs {
			if poi.Base != nil && poi.Base.ID == baseID {
				return poi
			}
		}
	}
	return nil
}

func (e *Engine) missionGiver(b *Base) *MissionGiver {
	return &MissionGiver{Name: "Quartermaster " + b.Name, Title: "Station Quartermaster"}
}

func (e *Engine) objective(w *World, m missionTemplate) MissionObjective {
	it, _ := itemByID(m.itemID)
	poi := w.baseLocation(m.baseID)
	sys := w.system(poi.SystemID)
	return MissionObjective{
		Type: "deliver", Description: fmt.Sprintf("Deliver %d %s to %s", m.qty, it.Name, poi.Base.Name),
		ItemID: m.itemID, Quantity: m.qty, TargetBaseID: m.baseID, TargetBaseName: poi.Base.Name,
		SystemID: sys.ID, SystemName: sys.Name,
	}
}

// dockedBase is the base the player is docked at, or a not_docked error saying what for.
func dockedBase(w *World, p *Player, what string) (*Base, error) {
	if p.poiID == "" {
		return nil, errorf(CodeInTransit, "You are in transit. Dock at a station to %s.", what)
	}
	poi := w.poi(p.poiID)
	if p.dockedAt == "" || poi.Base == nil {
		return nil, errorf(CodeNotDocked, "You must be docked at a station to %s. Travel to a station and dock first.", what)
	}
	return poi.Base, nil
}

// GetMissions answers get_missions: the board of the station the player is docked at, without the contracts it
// already holds.
func (e *Engine) GetMissions(sid string) (*MissionsResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	b, err := dockedBase(w, p, "view missions")
	held := map[string]bool{}
	for _, m := range p.missions {
		held[m.ID] = true
	}
	p.mu.Unlock()
	if err != nil {
		return nil, e.count(p, err)
	}
	res := &MissionsResult{BaseID: b.ID, BaseName: b.Name, Missions: []MissionOffer{}}
	poi := w.baseLocation(b.ID)
	sys := w.system(poi.SystemID)
	for _, m := range e.missionsAt(w, b) {
		if held[m.id] {
			continue
		}
		o := e.objective(w, m)
		res.Missions = append(res.Missions, MissionOffer{
			MissionID: m.id, TemplateID: m.templateID, Type: "supply", Title: m.title, Description: m.desc,
			Difficulty: m.difficulty, ExpiresInTicks: missionOfferTicks, Giver: e.missionGiver(b),
			Objectives: []MissionObjective{o}, Rewards: MissionRewards{Credits: m.reward}, Repeatable: true,
			IssuingBase: b.Name, IssuingBaseID: b.ID, IssuingSystemID: sys.ID, IssuingSystemName: sys.Name,
		})
	}
	return res, nil
}

// AcceptMission takes a contract from the board of the station the player is docked at (one tick).
func (e *Engine) AcceptMission(ctx context.Context, sid, missionID string) (any, error) {
	return e.submit(ctx, sid, command{name: "accept_mission", target: missionID})
}

// CompleteMission hands in a contract's goods at its station and pays the reward (one tick).
func (e *Engine) CompleteMission(ctx context.Context, sid, missionID string) (any, error) {
	return e.submit(ctx, sid, command{name: "complete_mission", target: missionID})
}

func (e *Engine) doAcceptMission(w *World, p *Player, id string) (any, error) {
	b, err := dockedBase(w, p, "accept missions")
	if err != nil {
		return nil, err
	}
	// A template id names the same offer (v2 accepts template_id).
	i := slices.IndexFunc(e.missionsAt(w, b), func(m missionTemplate) bool { return m.id == id || m.templateID == id })
	if i < 0 {
		return nil, errorf(CodeMissionNotFound, "Mission %q is not offered at %s. Use get_missions to see available missions and their IDs. Example: {\"mission_id\": \"<mission_id>\"}", id, b.Name)
	}
	m := e.missionsAt(w, b)[i]
	id = m.id
	if slices.ContainsFunc(p.missions, func(a *activeMission) bool { return a.ID == id }) {
		return nil, errorf(CodeMissionAlreadyAccepted, "You have already accepted %q. get_active_missions shows its progress.", m.title)
	}
	if len(p.missions) >= MaxActiveMissions {
		return nil, errorf(CodeMissionLimit, "You already have %d active missions (maximum %d). Complete or abandon one first.", len(p.missions), MaxActiveMissions)
	}
	now := e.now()
	p.missions = append(p.missions, &activeMission{ID: id, TemplateID: m.templateID, BaseID: b.ID, Accepted: now, AcceptTick: e.tick.Load()})
	return &AcceptMissionResult{
		MissionID: id, TemplateID: m.templateID, Type: "supply", Title: m.title,
		ExpiresAt: timestamp(now.Add(time.Duration(missionTicks) * e.cfg.Tick)),
		Message:   fmt.Sprintf("Mission accepted: %s. %s", m.title, e.objective(w, m).Description+"."),
	}, nil
}

func (e *Engine) doCompleteMission(w *World, p *Player, id string) (any, error) {
	i := slices.IndexFunc(p.missions, func(a *activeMission) bool { return a.ID == id })
	if i < 0 {
		return nil, errorf(CodeMissionNotFound, "You have no active mission %q. get_active_missions lists yours. Example: {\"mission_id\": \"<mission_id>\"}", id)
	}
	am := p.missions[i]
	m, ok := e.missionByID(w, id)
	if !ok {
		p.missions = slices.Delete(p.missions, i, i+1)
		return nil, errorf(CodeMissionNotFound, "Mission %q no longer exists.", id)
	}
	if e.tick.Load()-am.AcceptTick > missionTicks {
		p.missions = slices.Delete(p.missions, i, i+1)
		return nil, errorf(CodeMissionExpired, "Mission %q expired before you completed it.", m.title)
	}
	target := w.baseLocation(m.baseID)
	if p.dockedAt != m.baseID {
		return nil, errorf(CodeNotDocked, "Deliveries for %q are handed in docked at %s (%s).", m.title, target.Base.Name, target.SystemID)
	}
	if have := p.cargo[m.itemID]; have < m.qty {
		it, _ := itemByID(m.itemID)
		return nil, errorf(CodeMissionIncomplete, "%q needs %d %s in your cargo; you have %d.", m.title, m.qty, it.Name, have)
	}
	p.cargo[m.itemID] -= m.qty
	if p.cargo[m.itemID] == 0 {
		delete(p.cargo, m.itemID)
	}
	p.credits += m.reward
	p.creditsEarned += m.reward
	p.missions = slices.Delete(p.missions, i, i+1)
	p.missionsDone++
	return &CompleteMissionResult{
		MissionID: id, Title: m.title, CreditsEarned: m.reward,
		Message: fmt.Sprintf("Mission complete: %s. %d credits paid.", m.title, m.reward),
	}, nil
}

// ActiveMissions answers get_active_missions.
func (e *Engine) ActiveMissions(sid string) (*ActiveMissionsResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	held := make([]activeMission, len(p.missions))
	for i, m := range p.missions {
		held[i] = *m
	}
	cargo := map[string]int{}
	for k, v := range p.cargo {
		cargo[k] = v
	}
	p.mu.Unlock()
	res := &ActiveMissionsResult{Missions: []ActiveMissionView{}, MaxMissions: MaxActiveMissions}
	now := e.tick.Load()
	for _, am := range held {
		m, ok := e.missionByID(w, am.ID)
		if !ok {
			continue
		}
		b := w.baseLocation(m.baseID).Base
		o := e.objective(w, m)
		cur := min(cargo[m.itemID], m.qty)
		it, _ := itemByID(m.itemID)
		sys := w.system(o.SystemID)
		res.Missions = append(res.Missions, ActiveMissionView{
			MissionID: m.id, TemplateID: m.templateID, Type: "supply", Title: m.title, Description: m.desc,
			Difficulty: m.difficulty, AcceptedAt: timestamp(am.Accepted),
			ExpiresInTicks: max(0, int(missionTicks-(now-am.AcceptTick))), Giver: e.missionGiver(b),
			IssuingBase: b.Name, IssuingBaseID: b.ID, IssuingSystemID: sys.ID, IssuingSystemName: sys.Name,
			Objectives: []ActiveObjective{{
				Type: o.Type, Description: o.Description, ItemID: o.ItemID, ItemName: it.Name,
				Current: cur, Required: m.qty, Completed: cur >= m.qty, InCargo: cargo[m.itemID],
				TargetBase: b.ID, TargetBaseName: b.Name, SystemID: sys.ID, SystemName: sys.Name,
			}},
			PercentComplete: float64(cur*100) / float64(m.qty),
			Rewards:         MissionRewards{Credits: m.reward},
		})
	}
	slices.SortStableFunc(res.Missions, func(a, b ActiveMissionView) int { return cmp.Compare(a.AcceptedAt, b.AcceptedAt) })
	res.TotalCount = len(res.Missions)
	return res, nil
}

// AbandonMission drops an accepted contract; no penalty, the cargo stays.
func (e *Engine) AbandonMission(sid, id string) (*MessageResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	i := slices.IndexFunc(p.missions, func(a *activeMission) bool { return a.ID == id })
	if i >= 0 {
		p.missions = slices.Delete(p.missions, i, i+1)
	}
	p.mu.Unlock()
	if i < 0 {
		return nil, e.count(p, errorf(CodeMissionNotFound, "You have no active mission %q. get_active_missions lists yours. Example: {\"mission_id\": \"<mission_id>\"}", id))
	}
	m, _ := e.missionByID(e.w(), id)
	return &MessageResult{Message: "Mission abandoned: " + m.title + ". Any cargo you gathered stays in your hold."}, nil
}

// DeclineMission answers decline_mission: the giver's reply. The offer stays on the board.
func (e *Engine) DeclineMission(sid, templateID string) (*MessageResult, error) {
	p, err := e.begin(sid, kindRead)
	if err != nil {
		return nil, err
	}
	w := e.w()
	p.mu.Lock()
	b, err := dockedBase(w, p, "decline missions")
	p.mu.Unlock()
	if err != nil {
		return nil, e.count(p, err)
	}
	for _, m := range e.missionsAt(w, b) {
		if m.templateID == templateID || m.id == templateID {
			return &MessageResult{Message: "\"Suit yourself. The " + m.title + " stays on the board if you change your mind.\""}, nil
		}
	}
	return nil, e.count(p, errorf(CodeMissionNotFound, "No mission %q is offered at %s. Example: {\"template_id\": \"<template_id>\"}", templateID, b.Name))
}
