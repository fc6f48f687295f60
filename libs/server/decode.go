package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/text"
)

// A request that cannot be decoded is the caller's fault, but grpc-go answers it with Internal ("grpc: failed to
// unmarshal the received message: string field contains invalid UTF-8") and writes that status itself, inside
// RecvMsg, before any handler or interceptor could map it. So the server's codec (decodeCodec) does not fail: it
// resets the message, notes why it could not decode it, and the place that asked for the message — the unary
// decode function Register wraps (withDecodeErrors), or the stream interceptor's RecvMsg (decodeStream) — returns
// InvalidArgument instead: naming the field for a string that is not UTF-8 (protobuf-go refuses them in proto3),
// naming none for other garbage. The handler never sees the message.

// decodeFailures remembers, per message the codec could not decode, why, until its caller takes it.
type decodeFailures struct{ m sync.Map }

// take returns the failure noted for msg, if any, and forgets it.
func (f *decodeFailures) take(msg any) (error, bool) {
	v, ok := f.m.LoadAndDelete(msg)
	if !ok {
		return nil, false
	}
	return v.(error), true
}

// decodeCodec is grpc-go's proto codec, except that a request it cannot decode leaves an empty message and a note
// in failures instead of an error.
type decodeCodec struct {
	encoding.CodecV2
	failures *decodeFailures
}

func newDecodeCodec(f *decodeFailures) decodeCodec {
	return decodeCodec{CodecV2: encoding.GetCodecV2("proto"), failures: f}
}

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	proto.Reset(m)
	if field := badUTF8Field(m.ProtoReflect().Descriptor(), data.Materialize()); field != "" {
		c.failures.m.Store(v, errs.InvalidField(field, "is not valid UTF-8 (every string field must be UTF-8 text)"))
	} else {
		c.failures.m.Store(v, &errs.Error{Kind: errs.Invalid, Msg: "the request is not a valid protobuf message of this method's request type"})
	}
	return nil
}

// badUTF8Field returns the path (e.g. "memories[2].content") of the first string field in b, a wire-format message
// of md, whose value is not UTF-8; empty when there is none or b does not parse that far.
func badUTF8Field(md protoreflect.MessageDescriptor, b []byte) string {
	seen := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ""
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		name := string(fd.Name())
		if fd.IsList() {
			name = fmt.Sprintf("%s[%d]", name, seen[num])
			seen[num]++
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return name
			}
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if fd.IsMap() {
				if inner := badUTF8Field(fd.Message(), v); inner != "" {
					return string(fd.Name()) + "." + inner
				}
			} else if inner := badUTF8Field(fd.Message(), v); inner != "" {
				return name + "." + inner
			}
		}
	}
	return ""
}

// withDecodeErrors returns a copy of desc whose unary handlers' decode function returns the codec's noted failure.
func withDecodeErrors(desc *grpc.ServiceDesc, f *decodeFailures, log *slog.Logger) *grpc.ServiceDesc {
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i, m := range d.Methods {
		h := m.Handler
		d.Methods[i].Handler = func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
			return h(srv, ctx, func(v any) error {
				if err := dec(v); err != nil {
					return err
				}
				if err, bad := f.take(v); bad {
					return ToStatus(ctx, log, err)
				}
				return nil
			}, in)
		}
	}
	return &d
}

// decodeStream returns the codec's noted failure from RecvMsg, as withDecodeErrors does for unary calls.
type decodeStream struct {
	grpc.ServerStream
	failures *decodeFailures
	log      *slog.Logger
}

func (d decodeStream) RecvMsg(m any) error {
	if err := d.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if err, bad := d.failures.take(m); bad {
		return ToStatus(d.Context(), d.log, err)
	}
	return nil
}

// maxPublicBytes bounds the text of a status message and of a field violation's description. A status travels in
// HTTP/2 trailers: a message that echoed a caller's 10 MB value (twice: the message and the BadRequest detail)
// overflowed them, and the caller got "Unavailable: COMPRESSION_ERROR" instead of the refusal.
const maxPublicBytes = 1 << 10

// clip cuts s to maxPublicBytes at a rune boundary, saying it did.
func clip(s string) string {
	return text.Fit(s, maxPublicBytes, "… (cut)")
}
