// Package keytable is the commander's keys, one table for both consoles: the terminal console (`zoea tui`) builds
// its key bindings from it and dispatches on its actions, and the web console (`zoea web`) sends the same table to
// the browser, so a key does the same thing in both.
package keytable

// Action is what a key does.
type Action string

// The actions, in the order of the help line.
const (
	New       Action = "new"
	Broadcast Action = "broadcast"
	Message   Action = "message"
	Relaunch  Action = "relaunch"
	Stop      Action = "stop"
	Delete    Action = "delete"
	Configure Action = "configure"
	Focus     Action = "focus"
	Preview   Action = "preview"
	Filter    Action = "filter"
	Sort      Action = "sort"
	Help      Action = "help"
	Quit      Action = "quit"
	Back      Action = "back"
	Up        Action = "up"
	Down      Action = "down"
)

// Binding is one action's keys. Keys are named as Bubble Tea names them ("enter", "esc", "up", "n"); Label is how
// help shows the first one.
type Binding struct {
	Action Action
	Keys   []string
	Label  string
	// Help is the word help shows; Web says what the key does in the web console, where it differs.
	Help, Web string
	// OnMysis marks actions on one mysis: the selected row, or the mysis of the page or view.
	OnMysis bool
}

// Table is every binding, in help order.
var Table = []Binding{
	{Action: New, Keys: []string{"n"}, Help: "new", Web: "create a mysis (the form)"},
	{Action: Broadcast, Keys: []string{"b"}, Help: "broadcast", Web: "broadcast (the form)"},
	{Action: Message, Keys: []string{"m"}, Help: "message", OnMysis: true, Web: "message the mysis (the form)"},
	{Action: Relaunch, Keys: []string{"r"}, Help: "relaunch", OnMysis: true, Web: "start the mysis"},
	{Action: Stop, Keys: []string{"s"}, Help: "stop", OnMysis: true, Web: "stop the mysis"},
	{Action: Delete, Keys: []string{"d"}, Help: "delete", OnMysis: true, Web: "delete the mysis (asks first)"},
	{Action: Configure, Keys: []string{"c"}, Help: "configure", OnMysis: true, Web: "configure the mysis (the form)"},
	{Action: Focus, Keys: []string{"enter"}, Label: "⏎", Help: "focus", OnMysis: true, Web: "open the selected mysis"},
	{Action: Preview, Keys: []string{"p"}, Help: "preview", OnMysis: true, Web: "the next request's anatomy"},
	{Action: Filter, Keys: []string{"/"}, Help: "filter", Web: "filter the swarm"},
	{Action: Sort, Keys: []string{"o"}, Help: "sort", Web: "next sort order"},
	{Action: Help, Keys: []string{"?"}, Help: "help", Web: "this help"},
	{Action: Quit, Keys: []string{"q"}, Help: "quit", Web: "back to the swarm"},
	{Action: Back, Keys: []string{"esc"}, Help: "back", Web: "back to the swarm"},
	{Action: Up, Keys: []string{"up", "k"}, Help: "up", Web: "select the row above"},
	{Action: Down, Keys: []string{"down", "j"}, Help: "down", Web: "select the row below"},
}

// Lookup is the action of a key, named as Bubble Tea names it.
func Lookup(key string) (Action, bool) {
	for _, b := range Table {
		for _, k := range b.Keys {
			if k == key {
				return b.Action, true
			}
		}
	}
	return "", false
}

// Of is the binding of an action.
func Of(a Action) Binding {
	for _, b := range Table {
		if b.Action == a {
			return b
		}
	}
	panic("keytable: no action " + string(a))
}

// FirstLabel is how help shows the action's first key.
func (b Binding) FirstLabel() string {
	if b.Label != "" {
		return b.Label
	}
	return b.Keys[0]
}

// Browser is the table as the web console's script reads it: each key as the browser names it (KeyboardEvent.key:
// "Enter", "Escape", "ArrowUp") to its action.
func Browser() map[string]Action {
	names := map[string]string{"enter": "Enter", "esc": "Escape", "up": "ArrowUp", "down": "ArrowDown"}
	out := map[string]Action{}
	for _, b := range Table {
		for _, k := range b.Keys {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = b.Action
		}
	}
	return out
}
