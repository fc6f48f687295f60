package tui

import (
	"github.com/charmbracelet/bubbles/key"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/keytable"
)

// keyMap is the console's keys, built from the table both consoles share (internal/keytable).
type keyMap struct {
	New, Broadcast, Message, Relaunch, Stop, Delete, Configure key.Binding
	Focus, Preview, Filter, Sort, Help, Quit, Back, Up, Down   key.Binding
}

func defaultKeys() keyMap {
	b := func(a keytable.Action) key.Binding {
		kb := keytable.Of(a)
		return key.NewBinding(key.WithKeys(kb.Keys...), key.WithHelp(kb.FirstLabel(), kb.Help))
	}
	return keyMap{
		New: b(keytable.New), Broadcast: b(keytable.Broadcast), Message: b(keytable.Message), Relaunch: b(keytable.Relaunch),
		Stop: b(keytable.Stop), Delete: b(keytable.Delete), Configure: b(keytable.Configure), Focus: b(keytable.Focus),
		Preview: b(keytable.Preview), Filter: b(keytable.Filter), Sort: b(keytable.Sort), Help: b(keytable.Help),
		Quit: b(keytable.Quit), Back: b(keytable.Back), Up: b(keytable.Up), Down: b(keytable.Down),
	}
}

// short is the one-line help of the swarm view.
func (k keyMap) short() []key.Binding {
	return []key.Binding{k.New, k.Broadcast, k.Message, k.Relaunch, k.Stop, k.Delete, k.Configure, k.Focus, k.Preview, k.Filter, k.Sort, k.Help, k.Quit}
}
