package redisbridge_test

import (
	"fmt"

	"github.com/locknode/locknode/redisbridge"
)

// A `--mirror` flag value becomes a MirrorConfig; the node then runs
// redisbridge.NewMirror(cfg, node) with `go m.Run(ctx)`.
func ExampleParseMirrorURL() {
	cfg, err := redisbridge.ParseMirrorURL("redis://:secret@cache:6379/2?key_prefix=locknode:&filter=job:")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.KeyPrefix, cfg.Filter, cfg.BatchSize, cfg.VerifyInterval)
	_, err = redisbridge.ParseMirrorURL("redis://cache:6379?batch_size=0")
	fmt.Println(err)
	// Output:
	// locknode: job: 256 30s
	// redisbridge: mirror config: batch_size="0": want a positive integer
}
