-- +goose Up
-- The SpaceMolt MCP endpoint a mysis plays (issue 29): 'v1' (the legacy flat tools at /mcp), 'v2' (the action
-- tools at /mcp/v2), or '' for the swarm's (the runner's ZOEA_SPACEMOLT_ENDPOINT). The service validates it.
ALTER TABLE myses ADD COLUMN spacemolt_endpoint text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE myses DROP COLUMN spacemolt_endpoint;
