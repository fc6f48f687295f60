// Package web is `zoea web`, the commander's web console: the swarm, one mysis, the next request's anatomy and the
// spend as server-rendered pages (html/template, assets embedded), live through server-sent events fed by one watch
// of the bus's event stream, and the commander's actions as forms. It talks to the swarm through backend.Backend,
// as the terminal console does, and takes its keyboard shortcuts from internal/keytable.
//
// Safe by default: every page but the login form needs a session, made by typing the admin token once; the session
// lives in an HttpOnly, SameSite=Strict cookie, signed with a key derived from the token (so every replica accepts
// it and a new token ends it; the token itself never leaves the server and is never in a page or a URL); every state-changing request must come from this origin (http.CrossOriginProtection) and carry the
// session's CSRF token; model text is escaped by html/template after present.Safe has made bidi and control
// characters visible.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzhttp"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configure the console.
type Options struct {
	// Token is what the login form must be given (the swarm's admin token, or one `zoea web` made up). Required.
	Token string
	// CallTimeout bounds each call to the swarm (default 30s).
	CallTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SessionTTL is how long a login lasts (default 12h).
	SessionTTL time.Duration
	// Log gets one line per refused request and per failed call (nil: slog.Default(); zoea web passes a discard logger).
	Log *slog.Logger
	// Hosts are the host names browsers may reach the console by (the --url's host, --host). A request whose Host
	// is not one of them, not "localhost" and not an IP address is refused, so a DNS-rebinding page (a name of the
	// attacker's that resolves to this console) cannot use it.
	Hosts []string
	// TrustForwardedProto takes X-Forwarded-Proto: https from the proxy in front as TLS: cookies get Secure and
	// pages get HSTS. Only for a console that nothing reaches but that proxy.
	TrustForwardedProto bool
	// Addrs are the swarm's service addresses by service name ("runner", "bus", "memory"), for the sentence a
	// failed call shows ("cannot reach the bus at 127.0.0.1:7004: …").
	Addrs map[string]string
	// LoginAttempts is how many wrong tokens one client may send before it must wait LoginLockout (default 5, 1m).
	LoginAttempts int
	LoginLockout  time.Duration
}

// Server is the console's HTTP handler.
type Server struct {
	b     backend.Backend
	opts  Options
	hub   *hub
	pages map[string]*template.Template
	mux   http.Handler

	key []byte // signs sessions: derived from the token, so a new token ends every session

	hosts  map[string]bool
	logins *loginLimiter
}

// session is a login: signed, not stored, so any replica of the console accepts it.
type session struct {
	csrf    string
	expires time.Time
}

const (
	sessionCookie = "zoea_session"
	loginCookie   = "zoea_login"
	flashCookie   = "zoea_flash"
)

// New returns the console over b. Run starts its one watch of the event stream.
func New(b backend.Backend, opts Options) *Server {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.LoginAttempts <= 0 {
		opts.LoginAttempts = 5
	}
	if opts.LoginLockout <= 0 {
		opts.LoginLockout = time.Minute
	}
	if opts.Token == "" {
		panic("web: Options.Token is required")
	}
	mac := hmac.New(sha256.New, []byte(opts.Token))
	mac.Write([]byte("zoea web session key v1"))
	s := &Server{b: b, opts: opts, key: mac.Sum(nil), hosts: map[string]bool{"localhost": true},
		logins: newLoginLimiter(opts.LoginAttempts, opts.LoginLockout)}
	for _, h := range opts.Hosts {
		s.hosts[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	s.hub = newHub(b, opts.Now, opts.CallTimeout, opts.Log)
	s.hub.busAddr = opts.Addrs["bus"]
	s.pages = parsePages()
	s.mux = s.routes()
	return s
}

// Run watches the bus's event stream for every open page until ctx ends, opening it again when it fails.
func (s *Server) Run(ctx context.Context) { s.hub.run(ctx) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if s.secure(r) {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	if r.URL.Path != "/healthz" && !s.hostAllowed(r.Host) {
		s.opts.Log.Warn("refused a request for another host name", "host", r.Host, "path", r.URL.Path)
		s.refuse(w, r, http.StatusMisdirectedRequest, "refused: this console does not answer to the host name "+
			strconv.Quote(present.OneLine(r.Host))+"; reach it by localhost, an IP address or a name given to zoea web --host (or its --url)")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed: the request's Host is an IP address, localhost, or a configured name. A rebinding attack needs a name
// of its own, so an IP address is safe to answer.
func (s *Server) hostAllowed(hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if h == "" {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	return s.hosts[h]
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheForever(http.FileServerFS(assets))))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.authed(s.logout))

	mux.HandleFunc("GET /{$}", s.authed(s.swarmPage))
	mux.HandleFunc("GET /help", s.authed(s.helpPage))
	mux.HandleFunc("GET /spend", s.authed(s.spendPage))
	mux.HandleFunc("GET /events", s.authed(s.events))
	mux.HandleFunc("GET /mysis/{mysis}", s.authed(s.mysisPage))
	mux.HandleFunc("GET /mysis/{mysis}/anatomy", s.authed(s.anatomyPage))
	mux.HandleFunc("GET /mysis/{mysis}/delete", s.authed(s.deletePage))

	mux.HandleFunc("POST /broadcast", s.authed(s.changes(s.broadcast)))
	mux.HandleFunc("POST /create", s.authed(s.changes(s.create)))
	mux.HandleFunc("POST /bulk", s.authed(s.changes(s.bulk)))
	mux.HandleFunc("POST /mysis/{mysis}/start", s.authed(s.changes(s.start)))
	mux.HandleFunc("POST /mysis/{mysis}/stop", s.authed(s.changes(s.stop)))
	mux.HandleFunc("POST /mysis/{mysis}/delete", s.authed(s.changes(s.delete)))
	mux.HandleFunc("POST /mysis/{mysis}/message", s.authed(s.changes(s.message)))
	mux.HandleFunc("POST /mysis/{mysis}/configure", s.authed(s.changes(s.configure)))
	mux.HandleFunc("POST /mysis/{mysis}/limits", s.authed(s.changes(s.limits)))
	mux.HandleFunc("/", s.notFound)

	// Every unsafe method (POST here) from another origin is refused before any handler runs: the browser's
	// Sec-Fetch-Site, or else its Origin against the Host.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.opts.Log.Warn("refused a cross-origin request", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"))
		s.refuse(w, r, http.StatusForbidden, "refused: this request came from another site (its Origin is not this console's)")
	}))
	// Pages and assets go out gzipped to a browser that takes it (the swarm page of a large swarm is mostly
	// repeated markup); the event stream does not: each event must reach the page when it is flushed.
	gz := gzhttp.GzipHandler(mux)
	protected := cop.Handler(gz)
	events := cop.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events" {
			events.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
}

func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

func randomID() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on a supported platform
	}
	return hex.EncodeToString(b)
}

type ctxKey struct{}

// sessionOf is the request's session; authed put it there.
func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(ctxKey{}).(*session)
	return s
}

// authed lets a request through only with a live session: a page asked without one goes to the login form, anything
// else is refused.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.lookup(r)
		if sess == nil {
			if r.Method == http.MethodGet && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			s.refuse(w, r, http.StatusUnauthorized, "refused: log in first (the session is missing or has expired)")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess)))
	}
}

// changes checks the CSRF token of a state-changing request against its session's.
func (s *Server) changes(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := sessionOf(r)
		if got := r.PostFormValue("csrf"); got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
			s.opts.Log.Warn("refused a request without the session's CSRF token", "path", r.URL.Path)
			s.refuse(w, r, http.StatusForbidden, "refused: the form's CSRF token is missing or stale; reload the page and try again")
			return
		}
		h(w, r)
	}
}

func (s *Server) sign(parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// newSession is a session cookie's value: expiry and nonce, and their signature.
func (s *Server) newSession(expires time.Time) string {
	payload := binary.BigEndian.AppendUint64(nil, uint64(expires.Unix()))
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	payload = append(payload, nonce...)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.sign([]byte("session"), payload))
}

// lookup is the request's session when its cookie is signed with this console's key and has not expired.
func (s *Server) lookup(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	p64, m64, ok := strings.Cut(c.Value, ".")
	// Strict: a signature's last character carries two unused bits; without Strict four spellings of it decode to
	// the same bytes, so a cookie altered there would still be accepted.
	enc := base64.RawURLEncoding.Strict()
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil || len(payload) != 24 || !hmac.Equal(mac, s.sign([]byte("session"), payload)) {
		return nil
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(payload[:8])), 0)
	if !s.opts.Now().Before(expires) {
		return nil
	}
	return &session{csrf: hex.EncodeToString(s.sign([]byte("csrf"), payload)), expires: expires}
}

// secure: the browser reached the console over TLS, directly or through a trusted proxy.
func (s *Server) secure(r *http.Request) bool {
	return r.TLS != nil || (s.opts.TrustForwardedProto && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"))
}

// notFound answers a path the console has no page for.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if sess := s.lookup(r); sess != nil {
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess))
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusNotFound, "notfound", map[string]any{"Why": "no page at " + present.Safe(present.OneLine(r.URL.Path)) +
		": the console has the swarm (/), /spend, /help and /mysis/NAME"})
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.loginForm(w, r, http.StatusOK, "")
}

// loginForm shows the login form with a fresh login CSRF token (double-submitted: a cookie and the form field).
func (s *Server) loginForm(w http.ResponseWriter, r *http.Request, code int, problem string) {
	tok := randomID()
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: tok, Path: "/login", HttpOnly: true, Secure: s.secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, code, "login", map[string]any{"CSRF": tok, "Problem": problem})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	client := clientOf(r)
	if wait := s.logins.wait(client, s.opts.Now()); wait > 0 {
		s.opts.Log.Warn("refused a login from a client with too many wrong tokens", "client", client)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)))
		s.loginForm(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many wrong tokens from %s: wait %s before trying again",
			client, wait.Round(time.Second)))
		return
	}
	c, err := r.Cookie(loginCookie)
	form := r.PostFormValue("csrf")
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(form)) != 1 {
		s.opts.Log.Warn("refused a login without its CSRF token")
		s.loginForm(w, r, http.StatusForbidden, "refused: the login form's CSRF token is missing or stale; try again")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(s.opts.Token)) != 1 {
		s.opts.Log.Warn("refused a wrong admin token at login", "client", client)
		s.logins.failed(client, s.opts.Now())
		s.loginForm(w, r, http.StatusUnauthorized, "wrong token: the console takes the swarm's admin token (ZOEA_ADMIN_TOKEN)")
		return
	}
	s.logins.succeeded(client)
	id := s.newSession(s.opts.Now().Add(s.opts.SessionTTL))
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, Secure: s.secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: int(s.opts.SessionTTL / time.Second)})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/login", MaxAge: -1})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	sess := sessionOf(r)
	if got := r.PostFormValue("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
		s.refuse(w, r, http.StatusForbidden, "refused: the form's CSRF token is missing or stale; reload the page and try again")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// refuse answers a refused request with a page that says why.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, code, "refused", map[string]any{"Why": why})
}

// flash keeps an action's outcome for the session's next page in a short-lived cookie, never in the URL.
func (s *Server) flash(w http.ResponseWriter, r *http.Request, text string, ok bool) {
	v := "e"
	if ok {
		v = "o"
	}
	payload := []byte(v + present.Safe(text))
	enc := base64.RawURLEncoding
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: enc.EncodeToString(payload) + "." + enc.EncodeToString(s.sign([]byte("flash"), payload)),
		Path: "/", HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: 60})
}

// takeFlash reads the outcome of the last action, once.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) (string, bool) {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return "", false
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1})
	// Signed as a session is: another page on this host can set a cookie, but not one this console shows.
	p64, m64, _ := strings.Cut(c.Value, ".")
	enc := base64.RawURLEncoding.Strict()
	b, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil || len(b) < 2 || !hmac.Equal(mac, s.sign([]byte("flash"), b)) {
		return "", false
	}
	return string(b[1:]), b[0] == 'o'
}
