package mirror_test

import (
	"fmt"

	"github.com/locknode/locknode/redisbridge/mirror"
)

// A `--mirror` flag value becomes a Config; the node then runs
// mirror.New(cfg, node) with `go m.Run(ctx)`.
func ExampleParseURL() {
	cfg, err := mirror.ParseURL("redis://:secret@cache:6379/2?key_prefix=locknode:&filter=job:")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.KeyPrefix, cfg.Filter, cfg.BatchSize, cfg.VerifyInterval)
	_, err = mirror.ParseURL("redis://cache:6379?batch_size=0")
	fmt.Println(err)
	// Output:
	// locknode: job: 256 30s
	// mirror: config: batch_size="0": want a positive integer
}
