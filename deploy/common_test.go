package deploy

import (
	"os"
	"path/filepath"
	"testing"
)

// zoeaService is one Zoea server as README's service table defines it; every check derives its expectations from this table.
type zoeaService struct {
	name string
	port int
	grpc bool // gRPC health (grpc.health.v1); otherwise HTTP /healthz
}

var zoeaServices = []zoeaService{
	{name: "memory", port: 7001, grpc: true},
	{name: "composer", port: 7002, grpc: true},
	{name: "runner", port: 7003, grpc: true},
	{name: "bus", port: 7004, grpc: true},
	{name: "spacemolt-sim", port: 7100, grpc: false},
}

// webConsole is `zoea web` (the zoea image), deployed beside the services: HTTP /healthz on its port, its address in
// ZOEA_WEB_LISTEN (the CLI must not pick up a service's ZOEA_LISTEN_ADDR).
var webConsole = zoeaService{name: "web", port: 7200, grpc: false}

func zoeaServiceByName(name string) (zoeaService, bool) {
	for _, s := range zoeaServices {
		if s.name == name {
			return s, true
		}
	}
	return zoeaService{}, false
}

// repoRoot is the repository root: this package lives in <root>/deploy.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s has no go.mod: %v", root, err)
	}
	return root
}
