package chatpb_test

import (
	"reflect"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatpb"
)

func TestMessagesRoundTripExactly(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "rules"},
		{Role: chat.RoleUser, Content: "mine | sell: \"now\" ✓"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "sell", Arguments: `{"item_id": "iron_ore",  "quantity":5}`}, {ID: "c2", Name: "get_status", Arguments: `{}`}}},
		{Role: chat.RoleTool, Content: `{"credits":135}`, ToolCallID: "c1", Name: "sell"},
	}
	for _, m := range msgs {
		if got := chatpb.FromProtoMessage(chatpb.ToProtoMessage(m)); !reflect.DeepEqual(got, m) {
			t.Errorf("round trip changed %+v into %+v", m, got)
		}
	}
}

func TestUnknownRoles(t *testing.T) {
	if r := chatpb.FromProtoRole(0); r != "" {
		t.Errorf("unspecified role became %q", r)
	}
	if r := chatpb.ToProtoRole("narrator"); r != 0 {
		t.Errorf("unknown role became %v", r)
	}
}
