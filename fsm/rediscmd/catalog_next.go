//go:build locknode_next

package rediscmd

// nextSpecs are the synthetic next release's commands, for the
// rolling-upgrade tests (redisbridge/cmd_next.go).
var nextSpecs = []Spec{
	{Name: "next.note", Arity: 3, Flags: Write | Fast, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
}
