package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/callid"
)

// toOpenAIMessages converts the conversation. Arguments are passed on as the exact JSON text the model produced
// (chat.ToolCall keeps it verbatim so the prompt prefix stays byte-stable for the server's cache). Tool messages
// carry only tool_call_id: the API has no tool name field.
func toOpenAIMessages(msgs []chat.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case chat.RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case chat.RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case chat.RoleTool:
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case chat.RoleAssistant:
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: toOpenAIAssistant(m)})
		default:
			return nil, fmt.Errorf("openai: message with unknown role %q", m.Role)
		}
	}
	return out, nil
}

func toOpenAIAssistant(m chat.Message) *openai.ChatCompletionAssistantMessageParam {
	a := &openai.ChatCompletionAssistantMessageParam{}
	// An assistant message needs content or tool calls; content is left out only when calls stand in for it.
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = param.NewOpt(m.Content)
	}
	for _, tc := range m.ToolCalls {
		args := tc.Arguments
		if len(bytes.TrimSpace([]byte(args))) == 0 {
			args = "{}"
		}
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
			},
		})
	}
	return a
}

// toOpenAITools converts tool definitions to function tools. The schema goes through a map, so the SDK sends its
// keys sorted: the same tools always produce the same bytes.
func toOpenAITools(tools []llm.Tool) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		schema := shared.FunctionParameters{}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("openai: tool %s: parameters are not a JSON schema object: %w", t.Name, err)
			}
		}
		if _, ok := schema["type"]; !ok {
			schema["type"] = "object"
		}
		if _, ok := schema["properties"]; !ok {
			// OpenAI rejects an object schema without properties.
			schema["properties"] = map[string]any{}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = param.NewOpt(t.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

// fromOpenAIResponse builds the assistant message from the first choice. Reasoning is not part of the OpenAI schema:
// vLLM and DeepSeek send reasoning_content, OpenRouter and newer vLLM send reasoning, so both are read from the raw
// message JSON.
func fromOpenAIResponse(conversation []chat.Message, cc *openai.ChatCompletion) (llm.Response, error) {
	if len(cc.Choices) == 0 {
		return llm.Response{}, errors.New("openai: reply has no choices")
	}
	m := cc.Choices[0].Message
	msg := chat.Message{Role: chat.RoleAssistant, Content: m.Content}
	if msg.Content == "" && m.Refusal != "" {
		msg.Content = m.Refusal
	}
	for i, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered, so a custom call cannot be executed
		}
		args := tc.Function.Arguments
		if len(bytes.TrimSpace([]byte(args))) == 0 {
			args = "{}"
		}
		id := tc.ID
		if id == "" {
			id = callid.New(conversation, tc.Function.Name+"\x00"+args, i)
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	return llm.Response{
		Message:   msg,
		Reasoning: fromOpenAIReasoning(m.RawJSON()),
		Usage: llm.Usage{
			PromptTokens: int(cc.Usage.PromptTokens), CachedPromptTokens: int(cc.Usage.PromptTokensDetails.CachedTokens),
			CompletionTokens: int(cc.Usage.CompletionTokens), ReasoningTokens: int(cc.Usage.CompletionTokensDetails.ReasoningTokens),
		},
	}, nil
}

// fromOpenAIReasoning extracts the first non-empty string among the known reasoning fields. Non-string values
// (OpenRouter's structured reasoning_details, say) are ignored rather than failing the reply.
func fromOpenAIReasoning(raw string) string {
	var fields struct {
		ReasoningContent json.RawMessage `json:"reasoning_content"`
		Reasoning        json.RawMessage `json:"reasoning"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &fields) != nil {
		return ""
	}
	for _, f := range []json.RawMessage{fields.ReasoningContent, fields.Reasoning} {
		var s string
		if json.Unmarshal(f, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
