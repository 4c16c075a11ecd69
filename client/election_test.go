package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// TestLeadershipDone: a Leadership's Done closes, with the cause in Err,
// however leadership ends: the client's session closes, the server ends
// the session, the election is taken over, or Resign.
func TestLeadershipDone(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, fake *httpapitest.Fake, s *client.Session, l *client.Leadership)
		want error
	}{
		{"session closed by the client", func(t *testing.T, _ *httpapitest.Fake, s *client.Session, _ *client.Leadership) {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, client.ErrLeadershipLost},
		{"session ended on the server", func(t *testing.T, fake *httpapitest.Fake, s *client.Session, _ *client.Leadership) {
			if err := fake.CloseSession(context.Background(), s.ID()); err != nil {
				t.Fatal(err)
			}
		}, client.ErrLeadershipLost},
		{"election taken over", func(t *testing.T, fake *httpapitest.Fake, s *client.Session, l *client.Leadership) {
			ctx := context.Background()
			if err := fake.Resign(ctx, l.Leader()); err != nil {
				t.Fatal(err)
			}
			if _, err := fake.Campaign(ctx, api.CampaignRequest{Election: "e", Value: "v", Session: s.ID()}); err != nil {
				t.Fatal(err)
			}
		}, client.ErrLeadershipLost},
		{"resign", func(t *testing.T, _ *httpapitest.Fake, _ *client.Session, l *client.Leadership) {
			if err := l.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, client.ErrResigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fake := httpapitest.NewFake()
			c := newClient(t, httpapitest.NewServer(t, fake).URL)
			s, err := c.NewSession(ctx, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			l, err := c.Elect(ctx, "e", "v", s)
			if err != nil {
				t.Fatal(err)
			}
			// Proclaim keeps the leadership: Done stays open.
			if err := l.Proclaim(ctx, "v2"); err != nil {
				t.Fatal(err)
			}
			if got := l.Leader(); got.Value != "v2" || got.Token == "" {
				t.Fatalf("after proclaim %+v", got)
			}
			select {
			case <-l.Done():
				t.Fatalf("done after proclaim: %v", l.Err())
			default:
			}
			tc.end(t, fake, s, l)
			select {
			case <-l.Done():
			case <-ctx.Done():
				t.Fatal("Done never closed")
			}
			if !errors.Is(l.Err(), tc.want) {
				t.Fatalf("Err = %v, want %v", l.Err(), tc.want)
			}
			if err := l.Proclaim(ctx, "v3"); err == nil {
				t.Fatal("proclaim after the leadership ended succeeded")
			}
		})
	}
}
