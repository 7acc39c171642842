package consistency

import (
	"context"
	"log/slog"
)

// attrsHandler adds a message's attributes (queue, message id, dequeue
// count, transaction id) to the records that reach its handler. It is
// what Logger.With would do, without its cost on the hot path: a handler
// such as slog's JSONHandler formats With's attributes as soon as it is
// called, once per message, while most messages log nothing at the
// level a worker runs at. Here the attributes are formatted only when a
// record is written.
type attrsHandler struct {
	h     slog.Handler
	attrs []slog.Attr
}

// withAttrs returns log with attrs added to every record it writes.
func withAttrs(log *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(&attrsHandler{h: log.Handler(), attrs: attrs})
}

func (a *attrsHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return a.h.Enabled(ctx, l)
}

// Handle writes r with the attributes first, where With would have put
// them.
func (a *attrsHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(a.attrs...)
	r.Attrs(func(at slog.Attr) bool {
		out.AddAttrs(at)
		return true
	})
	return a.h.Handle(ctx, out)
}

func (a *attrsHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrsHandler{h: a.h, attrs: append(a.attrs[:len(a.attrs):len(a.attrs)], attrs...)}
}

func (a *attrsHandler) WithGroup(name string) slog.Handler {
	return a.h.WithAttrs(a.attrs).WithGroup(name)
}
