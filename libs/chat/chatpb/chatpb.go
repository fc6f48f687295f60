// Package chatpb converts the chat vocabulary (libs/chat) to and from its protobuf form, once for every service
// that sends conversations over gRPC (composer → runner, runner → memory).
package chatpb

import (
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
)

// ToProtoRole converts a role; an unknown role becomes ROLE_UNSPECIFIED, which servers reject.
func ToProtoRole(r chat.Role) memoryv1.Role {
	switch r {
	case chat.RoleSystem:
		return memoryv1.Role_ROLE_SYSTEM
	case chat.RoleUser:
		return memoryv1.Role_ROLE_USER
	case chat.RoleAssistant:
		return memoryv1.Role_ROLE_ASSISTANT
	case chat.RoleTool:
		return memoryv1.Role_ROLE_TOOL
	}
	return memoryv1.Role_ROLE_UNSPECIFIED
}

// FromProtoRole converts a role; an unknown one becomes "", which the validator and the composer reject visibly.
func FromProtoRole(r memoryv1.Role) chat.Role {
	switch r {
	case memoryv1.Role_ROLE_SYSTEM:
		return chat.RoleSystem
	case memoryv1.Role_ROLE_USER:
		return chat.RoleUser
	case memoryv1.Role_ROLE_ASSISTANT:
		return chat.RoleAssistant
	case memoryv1.Role_ROLE_TOOL:
		return chat.RoleTool
	}
	return ""
}

// ToProtoToolCalls converts tool calls, arguments byte for byte; nil stays nil.
func ToProtoToolCalls(tcs []chat.ToolCall) []*memoryv1.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]*memoryv1.ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = &memoryv1.ToolCall{Id: tc.ID, Name: tc.Name, ArgumentsJson: tc.Arguments}
	}
	return out
}

// FromProtoToolCalls converts tool calls, arguments byte for byte; none gives nil.
func FromProtoToolCalls(tcs []*memoryv1.ToolCall) []chat.ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]chat.ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = chat.ToolCall{ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArgumentsJson()}
	}
	return out
}

// ToProtoMessage converts one composed message.
func ToProtoMessage(m chat.Message) *composerv1.ChatMessage {
	return &composerv1.ChatMessage{Role: ToProtoRole(m.Role), Content: m.Content, ToolCalls: ToProtoToolCalls(m.ToolCalls),
		ToolCallId: m.ToolCallID, Name: m.Name}
}

// FromProtoMessage converts one composed message.
func FromProtoMessage(m *composerv1.ChatMessage) chat.Message {
	return chat.Message{Role: FromProtoRole(m.GetRole()), Content: m.GetContent(), ToolCalls: FromProtoToolCalls(m.GetToolCalls()),
		ToolCallID: m.GetToolCallId(), Name: m.GetName()}
}
