package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// DebugPath is where the debug listener (Config.DebugAddr, ZOEA_DEBUG_ADDR) serves Go's runtime profiles:
// DebugPath+"goroutine?debug=1" starts with "goroutine profile: total N".
const DebugPath = "/debug/pprof/"

// CheckDebugAddr accepts what ZOEA_DEBUG_ADDR may be: empty (off), or host:port where the host is a loopback IP
// (127.0.0.0/8, ::1) or "localhost". Profiles show a process's internals (goroutine stacks, command line), so the
// debug port never listens beyond the machine: a wildcard (":6060", "0.0.0.0:6060") or any other host is refused.
func CheckDebugAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("ZOEA_DEBUG_ADDR: %w (want a loopback host:port such as 127.0.0.1:6060)", err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("ZOEA_DEBUG_ADDR: %q is not a loopback address: the debug port serves pprof and listens only on 127.0.0.1, ::1 or localhost (e.g. 127.0.0.1:6060)", addr)
	}
	return nil
}

// ServeDebug starts the debug listener on addr (CheckDebugAddr first; empty: nothing listens, a nil address and a
// stop that does nothing). It serves net/http/pprof under DebugPath on its own mux, never on http.DefaultServeMux
// or a service's port, and the published caches' fill at CachesPath (PublishCaches); it logs the bound address as
// "debug server listening". stop closes it.
func ServeDebug(addr string, log *slog.Logger) (bound net.Addr, stop func(), err error) {
	if err := CheckDebugAddr(addr); err != nil {
		return nil, nil, err
	}
	if addr == "" {
		return nil, func() {}, nil
	}
	if log == nil {
		log = slog.Default()
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("ZOEA_DEBUG_ADDR: listen %s: %w", addr, err)
	}
	// "localhost" is resolved by Listen: what it bound must still be loopback.
	if tcp, ok := lis.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		_ = lis.Close()
		return nil, nil, fmt.Errorf("ZOEA_DEBUG_ADDR: %q bound %s, which is not a loopback address", addr, lis.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc(DebugPath, pprof.Index)
	mux.HandleFunc(DebugPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(DebugPath+"profile", pprof.Profile)
	mux.HandleFunc(DebugPath+"symbol", pprof.Symbol)
	mux.HandleFunc(DebugPath+"trace", pprof.Trace)
	mux.HandleFunc(CachesPath, serveCaches)
	// No write timeout: a CPU profile or trace takes as long as its ?seconds= asks.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug server stopped", "err", err)
		}
	}()
	log.Info("debug server listening", "addr", lis.Addr().String(), "path", DebugPath)
	return lis.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}
