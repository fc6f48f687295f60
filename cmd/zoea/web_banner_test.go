package main

import (
	"net"
	"strings"
	"testing"
)

func TestWebBannerSaysWhereToOpenAndWarnsOnlyWhenReachable(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7200}
	any := &net.TCPAddr{IP: net.IPv6unspecified, Port: 7200}
	for _, c := range []struct {
		name      string
		addr      *net.TCPAddr
		reach     string
		open      string
		warnsOf   string
		wantLines int
	}{
		{"loopback listener", loop, "", "http://127.0.0.1:7200/", "", 1},
		{"all interfaces, no url", any, "", "http://[::]:7200/", "listening beyond this machine on [::]:7200", 2},
		{"container published on the host's loopback", any, "http://127.0.0.1:7200/", "web console: http://127.0.0.1:7200/ (listening on [::]:7200;", "", 1},
		{"localhost url", any, "http://localhost:7200/", "web console: http://localhost:7200/", "", 1},
		{"behind TLS", any, "https://zoea.example.org/", "web console: https://zoea.example.org/", "", 1},
		{"published beyond the machine without TLS", any, "http://10.1.2.3:7200/", "web console: http://10.1.2.3:7200/", "reachable beyond this machine at http://10.1.2.3:7200/ without TLS", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := webBanner("web console", c.addr, c.reach, "log in")
			if len(lines) != c.wantLines {
				t.Fatalf("%d lines, want %d: %q", len(lines), c.wantLines, lines)
			}
			if !strings.Contains(lines[0], c.open) {
				t.Errorf("first line %q does not say %q", lines[0], c.open)
			}
			if c.warnsOf != "" && !strings.Contains(lines[1], c.warnsOf) {
				t.Errorf("warning %q does not say %q", lines[1], c.warnsOf)
			}
		})
	}
}

func TestWebURLMustBeOpenable(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:7200", "ftp://x/", "http://", "::"} {
		err := checkWebURL(bad)
		if err == nil || !strings.Contains(err.Error(), "--url") {
			t.Errorf("checkWebURL(%q) = %v, want an error naming --url", bad, err)
		}
	}
	for _, good := range []string{"http://127.0.0.1:7200/", "https://zoea.example.org"} {
		if err := checkWebURL(good); err != nil {
			t.Errorf("checkWebURL(%q) = %v", good, err)
		}
	}
}
