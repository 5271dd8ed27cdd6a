package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestAuditLoggerLevels: a machine's right login is an audit line at
// debug, written only when the log is at debug; its failure is written at
// info.
func TestAuditLoggerLevels(t *testing.T) {
	ok := nmauth.Event{Type: nmauth.EventLoginSucceeded, Kind: nmauth.KindHost, Name: "host-1"}
	failed := nmauth.Event{Type: nmauth.EventLoginFailed, Kind: nmauth.KindHost, Name: "host-1"}
	for _, c := range []struct {
		level      slog.Level
		event      nmauth.Event
		want       bool
		wantMarker string
	}{
		{slog.LevelInfo, ok, false, ""},
		{slog.LevelDebug, ok, true, "level=DEBUG"},
		{slog.LevelInfo, failed, true, "level=INFO"},
	} {
		var buf bytes.Buffer
		auditLogger(newLogger(&buf, false, c.level))(context.Background(), c.event)
		line := buf.String()
		if got := strings.Contains(line, "msg=audit"); got != c.want {
			t.Errorf("log at %v, %s: line %q, want one: %v", c.level, c.event.Type, line, c.want)
		}
		if c.want && (!strings.Contains(line, c.wantMarker) || !strings.Contains(line, "host-1")) {
			t.Errorf("log at %v, %s: line %q, want %s and the host", c.level, c.event.Type, line, c.wantMarker)
		}
	}
}
