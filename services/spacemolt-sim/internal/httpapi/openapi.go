package httpapi

import (
	"encoding/json"
	"net/http"
)

// serveOpenAPI answers GET /api/v2/openapi.json: an OpenAPI 3 document the simulator builds from its own action
// table, so that clients which discover the routes from the server's description (admiral's HTTP v2 connection
// reads each path's tool/action and operationId) find the commands the simulator serves. It is the simulator's
// description of itself, not the live server's document.
func (a *API) serveOpenAPI(w http.ResponseWriter) {
	paths := map[string]any{}
	envelope := map[string]any{"$ref": "#/components/schemas/V2Response"}
	ok := map[string]any{"200": map[string]any{"description": "Result", "content": map[string]any{"application/json": map[string]any{"schema": envelope}}}}
	paths[Prefix+"/session"] = map[string]any{"post": map[string]any{"operationId": "createSession", "summary": "Create a new session", "responses": ok}}
	paths[Prefix+"/notifications"] = map[string]any{"get": map[string]any{"operationId": "getNotifications", "summary": "Poll pending notifications",
		"security": []any{map[string]any{"SessionId": []any{}}}, "responses": ok}}
	for _, va := range a.v2.V2Actions() {
		path, opID := Prefix+"/"+va.Tool+"/"+va.Action, va.Tool+"_"+va.Action
		if va.Action == "" {
			path, opID = Prefix+"/"+va.Tool, va.Tool
		}
		props := map[string]any{}
		var required []string
		for _, p := range va.Params {
			props[p.Name] = map[string]any{"type": p.Type, "description": p.Description}
			if p.Required {
				required = append(required, p.Name)
			}
		}
		schema := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			schema["required"] = required
		}
		op := map[string]any{
			"operationId": opID, "summary": va.Description, "x-mutation": va.Mutation,
			"security":    []any{map[string]any{"SessionId": []any{}}},
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schema}}},
			"responses":   ok,
		}
		entry := map[string]any{"post": op}
		if va.Action == "help" {
			entry["get"] = map[string]any{"operationId": opID + "_get", "summary": va.Description, "responses": ok}
		}
		paths[path] = entry
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "SpaceMolt HTTP API v2 (offline simulator)", "version": a.opts.Version,
			"description": "POST " + Prefix + "/session, then POST " + Prefix + "/{tool}/{action} with the " + SessionHeader + " header. Answers: {result, structuredContent, notifications, session, error}."},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"SessionId": map[string]any{"type": "apiKey", "in": "header", "name": SessionHeader}},
			"schemas": map[string]any{"V2Response": map[string]any{"type": "object", "properties": map[string]any{
				"result": map[string]any{}, "structuredContent": map[string]any{"type": "object"},
				"notifications": map[string]any{"type": "array"}, "session": map[string]any{"type": "object"},
				"error": map[string]any{"type": "object"},
			}}},
		},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
