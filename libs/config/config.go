// Package config loads a service's typed configuration from ZOEA_* (and standard) environment variables and logs
// it once at start with secrets masked, so an operator can see exactly what a process runs with.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"time"

	"github.com/caarlos0/env/v11"
)

// Secret is a string that never appears in logs or fmt output. Use it for tokens, keys and passwords.
type Secret string

// String masks the secret so an accidental %v cannot leak it.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "****"
}

// LogValue masks the secret in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Reveal returns the secret's value; call it only where the secret is used.
func (s Secret) Reveal() string { return string(s) }

// Load parses environment variables into a new T using `env` and `envDefault` struct tags.
func Load[T any]() (T, error) {
	var cfg T
	err := LoadWith(&cfg)
	return cfg, err
}

// LoadWith parses environment variables into cfg, keeping values already set in cfg for variables that are unset.
// Services use it to preset per-service defaults (such as their own listen port) before parsing.
func LoadWith[T any](cfg *T) error {
	if err := env.Parse(cfg); err != nil {
		return fmt.Errorf("config: %w", nameVariables(cfg, err))
	}
	return nil
}

// nameVariables rewrites parse errors to name the environment variable, which is what an operator can fix,
// instead of the Go field.
func nameVariables(cfg any, err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	byField := map[string]string{}
	fieldVars(reflect.TypeOf(cfg), byField)
	var out []error
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) && byField[pe.Name] != "" {
			out = append(out, fmt.Errorf("%s: cannot parse as %s: %w", byField[pe.Name], pe.Type, pe.Err))
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Log writes one line with every field of cfg that has an env tag, named by its variable, secrets masked.
func Log(log *slog.Logger, msg string, cfg any) {
	log.Info(msg, Attrs(cfg)...)
}

// Attrs returns cfg's fields as log attributes keyed by environment variable name.
func Attrs(cfg any) []any {
	var out []any
	collect(reflect.ValueOf(cfg), &out)
	return out
}

var secretType = reflect.TypeFor[Secret]()

func collect(v reflect.Value, out *[]any) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		name := f.Tag.Get("env")
		if name == "" {
			if fv.Kind() == reflect.Struct || fv.Kind() == reflect.Pointer {
				collect(fv, out)
			}
			continue
		}
		if i := indexComma(name); i >= 0 {
			name = name[:i]
		}
		switch {
		case f.Type == secretType:
			*out = append(*out, slog.String(name, fv.Interface().(Secret).String()))
		case f.Tag.Get("secret") == "true":
			*out = append(*out, slog.String(name, maskAny(fv)))
		case f.Type == reflect.TypeFor[time.Duration]():
			*out = append(*out, slog.String(name, fv.Interface().(time.Duration).String()))
		default:
			*out = append(*out, slog.Any(name, fv.Interface()))
		}
	}
}

func fieldVars(t reflect.Type, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name := f.Tag.Get("env"); name != "" {
			if j := indexComma(name); j >= 0 {
				name = name[:j]
			}
			out[f.Name] = name
		} else {
			fieldVars(f.Type, out)
		}
	}
}

func maskAny(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	return "****"
}

func indexComma(s string) int {
	for i := range len(s) {
		if s[i] == ',' {
			return i
		}
	}
	return -1
}

// RedactURL is a URL as logs and messages may show it: with its password replaced by "xxxxx" (net/url's
// Redacted), or "(unparseable URL)" when it is not one, so a malformed URL holding a password is never echoed.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// Secrets returns the values of cfg's secret fields (config.Secret, or tagged secret:"true"), and the password or
// token inside a secret URL, for a redactor to scrub wherever they are echoed (libs/redact): the log masks them by
// field, but a provider or peer that quotes one back puts it in text no field mask reaches.
func Secrets(cfg any) []string {
	var out []string
	secrets(reflect.ValueOf(cfg), &out)
	return out
}

func secrets(v reflect.Value, out *[]string) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		switch {
		case f.Type == secretType:
			if s := fv.Interface().(Secret).Reveal(); s != "" {
				*out = append(*out, s)
			}
		case f.Tag.Get("secret") == "true" && fv.Kind() == reflect.String:
			s := fv.String()
			if s == "" {
				continue
			}
			*out = append(*out, s)
			if u, err := url.Parse(s); err == nil && u.User != nil {
				if p, ok := u.User.Password(); ok && p != "" {
					*out = append(*out, p)
				} else if name := u.User.Username(); name != "" {
					*out = append(*out, name) // nats://<token>@host
				}
			}
		case f.Tag.Get("env") == "" && (fv.Kind() == reflect.Struct || fv.Kind() == reflect.Pointer):
			secrets(fv, out)
		}
	}
}
