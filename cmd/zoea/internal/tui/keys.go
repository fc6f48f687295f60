package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is the console's keys: the seed's single letters, plus / to filter, p to preview and o to sort.
type keyMap struct {
	New, Broadcast, Message, Relaunch, Stop, Delete, Configure key.Binding
	Focus, Preview, Filter, Sort, Help, Quit, Back, Up, Down   key.Binding
}

func defaultKeys() keyMap {
	b := func(help string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(keys[0], help))
	}
	return keyMap{
		New:       b("new", "n"),
		Broadcast: b("broadcast", "b"),
		Message:   b("message", "m"),
		Relaunch:  b("relaunch", "r"),
		Stop:      b("stop", "s"),
		Delete:    b("delete", "d"),
		Configure: b("configure", "c"),
		Focus:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("⏎", "focus")),
		Preview:   b("preview", "p"),
		Filter:    b("filter", "/"),
		Sort:      b("sort", "o"),
		Help:      b("help", "?"),
		Quit:      b("quit", "q"),
		Back:      b("back", "esc"),
		Up:        b("up", "up", "k"),
		Down:      b("down", "down", "j"),
	}
}

// short is the one-line help of the swarm view.
func (k keyMap) short() []key.Binding {
	return []key.Binding{k.New, k.Broadcast, k.Message, k.Relaunch, k.Stop, k.Delete, k.Configure, k.Focus, k.Preview, k.Filter, k.Sort, k.Help, k.Quit}
}
