package fence

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/locknode/locknode/api"
)

// Checker is CheckAndAdvance for one resource: OK iff token is at least
// the highest token seen for resource, which it then records. It is the
// shape of api.Locker.FenceCheck, so a *client.Client is a Checker that
// asks the cluster's registry.
type Checker interface {
	FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error)
}

var (
	// ErrFull: the Memory checker tracks its maximum number of resources
	// and refuses a new one rather than grow without bound.
	ErrFull = errors.New("fence: too many resources tracked")
)

// DefaultMaxResources is the capacity of NewMemory(0).
const DefaultMaxResources = 100_000

// Memory is a Checker kept in this process's memory: fine for a single
// resource server; it forgets everything on restart (which admits an old
// token once after a restart: use pgfence where that matters).
type Memory struct {
	limits api.Limits
	max    int

	mu      sync.Mutex
	highest map[string]uint64
}

// NewMemory returns a Memory that tracks at most maxResources resources
// (0: DefaultMaxResources). Resource names are checked against
// api.DefaultLimits, as the cluster checks them.
func NewMemory(maxResources int) *Memory {
	if maxResources <= 0 {
		maxResources = DefaultMaxResources
	}
	return &Memory{limits: api.DefaultLimits(), max: maxResources, highest: map[string]uint64{}}
}

// FenceCheck implements Checker. A new resource past the capacity is
// refused with ErrFull; nothing is evicted, since forgetting a resource
// would admit its stale tokens again.
func (m *Memory) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	req := api.FenceCheckRequest{Resource: resource, Token: token}
	if err := req.Validate(m.limits); err != nil {
		return api.FenceResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.highest[resource]
	if !ok && len(m.highest) >= m.max {
		return api.FenceResult{}, fmt.Errorf("%w: %d resources", ErrFull, m.max)
	}
	if token < h {
		return api.FenceResult{OK: false, Highest: h}, nil
	}
	m.highest[resource] = token
	return api.FenceResult{OK: true, Highest: token}, nil
}

// WithRegistry returns a Checker that asks registry (usually the
// cluster, a *client.Client) first and local only when the registry
// admits the token. The registry refuses tokens the cluster never issued
// (api.ErrBadRequest), which local alone cannot know; local is where the
// resource records what it has accepted, and it answers last.
func WithRegistry(registry, local Checker) Checker { return chain{registry, local} }

type chain struct{ registry, local Checker }

func (c chain) FenceCheck(ctx context.Context, resource string, token uint64) (api.FenceResult, error) {
	r, err := c.registry.FenceCheck(ctx, resource, token)
	if err != nil {
		return api.FenceResult{}, fmt.Errorf("fence: registry: %w", err)
	}
	if !r.OK {
		return r, nil
	}
	return c.local.FenceCheck(ctx, resource, token)
}
