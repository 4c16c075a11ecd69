//go:build !locknode_next

package redisbridge

// nextCommands are the synthetic next release's commands (cmd_next.go,
// build tag locknode_next); none otherwise.
var nextCommands []*command
