package ollama

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/ollama/ollama/api"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/callid"
)

// toOllamaMessages converts the conversation. Tool results carry both tool_call_id and tool_name: Ollama's chat
// templates name the tool a result came from, so a result stored without a name gets it from its call.
func toOllamaMessages(msgs []chat.Message) ([]api.Message, error) {
	callNames := map[string]string{}
	out := make([]api.Message, 0, len(msgs))
	for _, m := range msgs {
		om := api.Message{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case chat.RoleAssistant:
			for i, tc := range m.ToolCalls {
				om.ToolCalls = append(om.ToolCalls, api.ToolCall{
					ID:       tc.ID,
					Function: api.ToolCallFunction{Index: i, Name: tc.Name, Arguments: toOllamaArguments(tc.Arguments)},
				})
				callNames[tc.ID] = tc.Name
			}
		case chat.RoleTool:
			om.ToolCallID = m.ToolCallID
			om.ToolName = cmp.Or(m.Name, callNames[m.ToolCallID])
		case chat.RoleSystem, chat.RoleUser:
		default:
			return nil, fmt.Errorf("ollama: message with unknown role %q", m.Role)
		}
		out = append(out, om)
	}
	return out, nil
}

// toOllamaArguments parses a call's JSON text into Ollama's ordered arguments (key order survives, so the prompt
// the server renders stays byte-stable). Text that is not a JSON object, which another provider's model may have
// produced, is sent as no arguments: failing here would wedge the mysis on its own history forever.
func toOllamaArguments(text string) api.ToolCallFunctionArguments {
	args := api.NewToolCallFunctionArguments()
	if t := bytes.TrimSpace([]byte(text)); len(t) > 0 && t[0] == '{' {
		var parsed api.ToolCallFunctionArguments
		if err := json.Unmarshal(t, &parsed); err == nil {
			return parsed
		}
	}
	return args
}

// toOllamaTools converts tool definitions. Ollama's schema type keeps type, required, properties (in order),
// $defs and items; other JSON-schema keywords are dropped by the client's types, which Ollama ignores anyway.
func toOllamaTools(tools []llm.Tool) (api.Tools, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make(api.Tools, 0, len(tools))
	for _, t := range tools {
		var params api.ToolFunctionParameters
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return nil, fmt.Errorf("ollama: tool %s: parameters are not a JSON schema object: %w", t.Name, err)
			}
		}
		params.Type = cmp.Or(params.Type, "object")
		if params.Properties == nil {
			// A nil map marshals as "properties": null, which some templates choke on.
			params.Properties = api.NewToolPropertiesMap()
		}
		out = append(out, api.Tool{
			Type:     "function",
			Function: api.ToolFunction{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return out, nil
}

// fromOllamaResponse builds the assistant message. Ollama before 0.12 sends calls without ids; those get ids
// derived from the request and the call, so the same request always yields the same ids.
func fromOllamaResponse(conversation []chat.Message, acc accumulator) llm.Response {
	msg := chat.Message{Role: chat.RoleAssistant, Content: string(acc.content)}
	for i, tc := range acc.toolCalls {
		args, err := tc.Function.Arguments.MarshalJSON()
		if err != nil || len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		id := tc.ID
		if id == "" {
			id = callid.New(conversation, tc.Function.Name+"\x00"+string(args), i)
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: id, Name: tc.Function.Name, Arguments: string(args)})
	}
	return llm.Response{
		Message:   msg,
		Reasoning: string(acc.thinking),
		Usage:     llm.Usage{PromptTokens: acc.promptTokens, CompletionTokens: acc.outputTokens},
	}
}
