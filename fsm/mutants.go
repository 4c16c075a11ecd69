package fsm

// mutantEarly is how early the "lease-early" planted bug (mutants_on.go)
// ends a hold: one tick of the default cluster.Config.TickInterval, in
// FSM milliseconds.
const mutantEarly = 100
