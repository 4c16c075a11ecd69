package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/transport"
)

// peerStub is a Transport whose peers answer every call with answer.
type peerStub struct {
	answer func(addr string, req []byte) ([]byte, error)
}

func (p *peerStub) Addr() net.Addr                    { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (p *peerStub) RaftStreamLayer() raft.StreamLayer { return nil }
func (p *peerStub) Serve(transport.Handler)           {}
func (p *peerStub) Close() error                      { return nil }
func (p *peerStub) Call(_ context.Context, addr string, req []byte) ([]byte, error) {
	return p.answer(addr, req)
}

// TestRosterNodeInfo asks a peer for its addresses and versions through
// a stub transport: the answer of another roster is understood, and a
// peer that answers for another id, with an impossible version range, a
// refusal or a torn body is refused, as is a failed call.
func TestRosterNodeInfo(t *testing.T) {
	peer := partNode(t, SystemClock)
	peer.cfg.Advertised = ClientAddrs{HTTP: "127.0.0.1:8080", RESP: "127.0.0.1:6379"}
	info := peer.handleNodeInfo()
	legacy := appendStr(appendStr(appendStr([]byte{stOK}, "part"), "h:1"), "r:2")
	versions := func(lo, hi, active uint64) []byte {
		b := binary.AppendUvarint(append([]byte(nil), legacy...), lo)
		return binary.AppendUvarint(binary.AppendUvarint(b, hi), active)
	}
	refusal := append([]byte{stError}, "busy"...)
	tests := []struct {
		name    string
		answer  []byte
		callErr error
		want    nodeInfo
		wantErr string // the error contains it; "" for none
	}{
		{name: "another roster's answer", answer: info,
			want: nodeInfo{addrs: peer.cfg.Advertised, versions: LocalVersions(), active: peer.ClusterVersion()}},
		{name: "a peer that predates versions", answer: legacy,
			want: nodeInfo{addrs: ClientAddrs{HTTP: "h:1", RESP: "r:2"}, versions: legacyVersions}},
		{name: "explicit versions", answer: versions(1, 3, 2),
			want: nodeInfo{addrs: ClientAddrs{HTTP: "h:1", RESP: "r:2"}, versions: VersionRange{1, 3}, active: 2}},
		{name: "versions upside down", answer: versions(3, 1, 1), wantErr: "cluster versions 3..1"},
		{name: "version zero", answer: versions(0, 1, 1), wantErr: "cluster versions 0..1"},
		{name: "another id answers", answer: appendStr(appendStr(appendStr([]byte{stOK}, "n9"), ""), ""), wantErr: "n9 answered for part"},
		{name: "a torn body", answer: info[:3], wantErr: "node info"},
		{name: "a refusal", answer: refusal, wantErr: "busy"},
		{name: "the call fails", callErr: transport.ErrConnLost, wantErr: transport.ErrConnLost.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := partNode(t, SystemClock)
			var asked []byte
			n.tr = &peerStub{answer: func(addr string, req []byte) ([]byte, error) {
				if addr != "10.0.0.9:7000" {
					t.Errorf("called %s", addr)
				}
				asked = req
				return tc.answer, tc.callErr
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := n.roster.askNodeInfo(ctx, "part", "10.0.0.9:7000")
			if len(asked) != 1 || asked[0] != rpcNodeInfo {
				t.Fatalf("request %x, want the node-info kind alone", asked)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				if tc.callErr != nil && !errors.Is(err, tc.callErr) {
					t.Fatalf("err = %v does not wrap %v", err, tc.callErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("info %+v, want %+v", got, tc.want)
			}
		})
	}
}
