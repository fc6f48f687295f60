package web

import (
	"cmp"
	"math"
	"net/http"
	"slices"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// The swarm's whereabouts (/where): every mysis placed in its system and at its point of interest, as its newest
// get_status said (MysisStatus.ship). The page draws each system as a circle sized by how many myses are in it and
// lists the places under it; the runner learns no galaxy connections from play, so the systems are laid out in a
// grid by size, not by the game's map.

// namesPerPlace bounds the myses a place lists by name; the rest are counted.
const namesPerPlace = 12

type placeView struct {
	Name   string
	Docked bool
	Count  int
	Names  []string
	More   int
}

type systemView struct {
	Name          string
	Count, Docked int
	Places        []placeView
	// X, Y, R place its circle on the drawing.
	X, Y, R float64
}

// whereabouts groups a swarm by system and place, biggest first (then by name); unknown counts the myses whose
// ship the game has not described yet.
func whereabouts(list []*runnerv1.MysisStatus) (systems []systemView, unknown int) {
	bySystem := map[string]*systemView{}
	places := map[[2]string]*placeView{}
	for _, st := range list {
		sh := st.GetShip()
		if sh.GetSystem() == "" {
			unknown++
			continue
		}
		sys := bySystem[sh.GetSystem()]
		if sys == nil {
			sys = &systemView{Name: present.Safe(sh.GetSystem())}
			bySystem[sh.GetSystem()] = sys
		}
		sys.Count++
		place, docked := sh.GetPoi(), sh.GetDockedAt() != ""
		if docked {
			place = sh.GetDockedAt()
			sys.Docked++
		}
		key := [2]string{sh.GetSystem(), place}
		pv := places[key]
		if pv == nil {
			pv = &placeView{Name: present.Safe(place), Docked: docked}
			places[key] = pv
		}
		pv.Count++
		if len(pv.Names) < namesPerPlace {
			pv.Names = append(pv.Names, st.GetMysis().GetName())
		} else {
			pv.More++
		}
	}
	for key, pv := range places {
		slices.Sort(pv.Names)
		bySystem[key[0]].Places = append(bySystem[key[0]].Places, *pv)
	}
	for _, sys := range bySystem {
		slices.SortFunc(sys.Places, func(a, b placeView) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Name, b.Name)) })
		systems = append(systems, *sys)
	}
	slices.SortFunc(systems, func(a, b systemView) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.Name, b.Name)) })
	// The drawing: a grid of cells 120 wide, circles of area in proportion to the myses in the system.
	const cell, cols = 120.0, 6
	most := 1
	if len(systems) > 0 {
		most = systems[0].Count
	}
	for i := range systems {
		systems[i].X = cell/2 + cell*float64(i%cols)
		systems[i].Y = cell/2 + cell*float64(i/cols)
		systems[i].R = 8 + 44*math.Sqrt(float64(systems[i].Count)/float64(most))
	}
	return systems, unknown
}

func (s *Server) wherePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.call(r)
	defer cancel()
	list, err := s.b.List(ctx)
	if err != nil {
		s.failed(w, r, err, present.Subject{Service: "runner"})
		return
	}
	systems, unknown := whereabouts(list)
	rows := (len(systems) + 5) / 6
	s.render(w, r, http.StatusOK, "where", map[string]any{"Systems": systems, "Unknown": unknown, "Total": len(list),
		"Width": 720, "Height": max(1, rows) * 120})
}
