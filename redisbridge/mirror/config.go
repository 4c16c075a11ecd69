package mirror

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// Mirror errors.
var (
	// ErrConfig wraps every Config.Validate and ParseURL
	// refusal.
	ErrConfig = errors.New("mirror: config")
)

// Config configures a Mirror. Give exactly one of URL, Redis and
// Sentinel.
type Config struct {
	// URL of the Redis to mirror into, as go-redis ParseURL reads it:
	// redis://[user:password@]host:port[/db][?dial_timeout=3s&...],
	// rediss:// for TLS, unix:///path/to/socket. With master_name=NAME in
	// the query, host:port is a Sentinel and the mirror writes to the
	// master it names (follows fail-over).
	URL string
	// Redis are go-redis client options used as they are (address,
	// Username/Password, TLSConfig, timeouts), for what a URL cannot say.
	Redis *redis.Options
	// Sentinel are go-redis fail-over options (Sentinel addresses and
	// MasterName). Redis Cluster is not supported: a batch is one script
	// over many keys, which needs a single shard.
	Sentinel *redis.FailoverOptions
	// TLS, when set, makes the URL's connection TLS with this
	// configuration, whatever its scheme (rediss:// alone trusts the
	// system's roots and presents no certificate): the CA to trust
	// (RootCAs) and a client certificate for a Redis started with
	// tls-auth-clients. An empty ServerName is the URL's host. For Redis
	// and Sentinel set their TLSConfig instead.
	TLS *tls.Config

	// KeyPrefix is put before every key the mirror writes. Default ""
	// (lock "lock:x" is GET lock:x). With a non-empty prefix the mirror
	// owns every key under it: a resync deletes any it did not write.
	KeyPrefix string
	// Filter mirrors only locks whose name starts with it. Default "" (all
	// locks).
	Filter string

	// BatchSize is the most keys one script call writes; larger means
	// fewer round trips under load but longer Redis pauses. Default 256.
	BatchSize int
	// QueueSize bounds the changed keys buffered between the apply path
	// and Redis. When full the buffer is dropped and the mirror resyncs
	// from a snapshot, so memory stays bounded whatever Redis does.
	// Default 65536.
	QueueSize int
	// MinBackoff and MaxBackoff bound the wait between attempts after a
	// Redis error (doubling from min to max). Defaults 50ms and 5s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// CheckInterval is how often the mirror checks leadership and, when
	// idle, that Redis still holds its index (a FLUSHALL or a restart that
	// lost data is noticed within it). Followers trim their buffer to
	// the stored index at the same pace. Default 250ms.
	CheckInterval time.Duration
	// VerifyInterval is how often the writer compares every mirrored key
	// with the table and rewrites (and counts) what a Redis client changed.
	// Default 30s; negative disables the pass.
	VerifyInterval time.Duration
	// OpTimeout bounds one Redis call. Default 5s.
	OpTimeout time.Duration

	// Logger receives the mirror's logs. Default: a null logger.
	Logger hclog.Logger
}

// DefaultConfig returns the documented defaults, with no Redis set.
func DefaultConfig() Config {
	return Config{
		BatchSize:      256,
		QueueSize:      65536,
		MinBackoff:     50 * time.Millisecond,
		MaxBackoff:     5 * time.Second,
		CheckInterval:  250 * time.Millisecond,
		VerifyInterval: 30 * time.Second,
		OpTimeout:      5 * time.Second,
	}
}

// withDefaults fills zero fields with their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.QueueSize == 0 {
		c.QueueSize = d.QueueSize
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = d.MinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = d.MaxBackoff
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = d.CheckInterval
	}
	if c.VerifyInterval == 0 {
		c.VerifyInterval = d.VerifyInterval
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = d.OpTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Validate reports a config that cannot work. Zero numeric fields are
// valid (they take their defaults).
func (c Config) Validate() error {
	n := 0
	for _, set := range []bool{c.URL != "", c.Redis != nil, c.Sentinel != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("%w: give exactly one of URL, Redis and Sentinel", ErrConfig)
	case c.BatchSize < 0, c.QueueSize < 0:
		return fmt.Errorf("%w: BatchSize and QueueSize must not be negative", ErrConfig)
	case c.MinBackoff < 0, c.MaxBackoff < 0, c.CheckInterval < 0, c.OpTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	}
	d := c.withDefaults()
	switch {
	case d.QueueSize < d.BatchSize:
		return fmt.Errorf("%w: QueueSize %d below BatchSize %d", ErrConfig, d.QueueSize, d.BatchSize)
	case d.MaxBackoff < d.MinBackoff:
		return fmt.Errorf("%w: MaxBackoff below MinBackoff", ErrConfig)
	case strings.ContainsAny(c.KeyPrefix, "{}"):
		return fmt.Errorf("%w: KeyPrefix %q must not contain braces (hash tags)", ErrConfig, c.KeyPrefix)
	}
	if c.URL != "" {
		if _, _, err := parseRedisURL(c.URL); err != nil {
			return err
		}
	}
	if c.Sentinel != nil && (c.Sentinel.MasterName == "" || len(c.Sentinel.SentinelAddrs) == 0) {
		return fmt.Errorf("%w: Sentinel needs MasterName and SentinelAddrs", ErrConfig)
	}
	if c.TLS != nil && c.URL == "" {
		return fmt.Errorf("%w: TLS goes with URL (set TLSConfig in Redis or Sentinel)", ErrConfig)
	}
	if c.Redis != nil && c.Redis.Addr == "" {
		return fmt.Errorf("%w: Redis.Addr is empty", ErrConfig)
	}
	return nil
}

// client builds the go-redis client the config names.
func (c Config) client() (*redis.Client, error) {
	switch {
	case c.Redis != nil:
		o := *c.Redis
		return redis.NewClient(&o), nil
	case c.Sentinel != nil:
		o := *c.Sentinel
		return redis.NewFailoverClient(&o), nil
	}
	o, fo, err := parseRedisURL(c.URL)
	if err != nil {
		return nil, err
	}
	if fo != nil {
		if c.TLS != nil {
			// Sentinels and the master they name are dialed by address:
			// verify against the host each is dialed at.
			fo.TLSConfig = c.TLS.Clone()
		}
		return redis.NewFailoverClient(fo), nil
	}
	if c.TLS != nil {
		tc := c.TLS.Clone()
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(o.Addr); err == nil {
				tc.ServerName = host
			}
		}
		o.TLSConfig = tc
	}
	return redis.NewClient(o), nil
}

// parseRedisURL parses a plain URL into client options, or one with
// master_name into fail-over options.
func parseRedisURL(raw string) (*redis.Options, *redis.FailoverOptions, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: URL: %v", ErrConfig, err)
	}
	if u.Query().Has("master_name") {
		fo, err := redis.ParseFailoverURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: URL: %v", ErrConfig, err)
		}
		if fo.MasterName == "" {
			return nil, nil, fmt.Errorf("%w: URL: master_name is empty", ErrConfig)
		}
		return nil, fo, nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: URL: %v", ErrConfig, err)
	}
	return o, nil, nil
}

// Mirror-specific URL query parameters understood by ParseURL.
var mirrorURLParams = []string{"key_prefix", "filter", "batch_size", "queue_size", "verify_interval"}

// ParseURL returns DefaultConfig with the Redis given by rawURL
// (see Config.URL), for `--mirror` flags. Besides go-redis's own
// query parameters it reads the mirror's: key_prefix, filter, batch_size,
// queue_size and verify_interval (a Go duration; negative disables), e.g.
//
//	redis://:secret@cache:6379/2?key_prefix=locknode:&filter=job:
//
// The result is validated.
func ParseURL(rawURL string) (Config, error) {
	cfg := DefaultConfig()
	u, err := url.Parse(rawURL)
	if err != nil {
		return Config{}, fmt.Errorf("%w: URL: %v", ErrConfig, err)
	}
	q := u.Query()
	for _, p := range mirrorURLParams {
		if !q.Has(p) {
			continue
		}
		v := q.Get(p)
		q.Del(p)
		switch p {
		case "key_prefix":
			cfg.KeyPrefix = v
		case "filter":
			cfg.Filter = v
		case "batch_size", "queue_size":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Config{}, fmt.Errorf("%w: %s=%q: want a positive integer", ErrConfig, p, v)
			}
			if p == "batch_size" {
				cfg.BatchSize = n
			} else {
				cfg.QueueSize = n
			}
		case "verify_interval":
			d, err := time.ParseDuration(v)
			if err != nil || d == 0 {
				return Config{}, fmt.Errorf("%w: verify_interval=%q: want a non-zero duration", ErrConfig, v)
			}
			cfg.VerifyInterval = d
		}
	}
	u.RawQuery = q.Encode()
	cfg.URL = u.String()
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
