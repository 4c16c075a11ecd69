package api

// TransferRequest asks the leader to hand leadership to another voter
// (POST /v1/members/transfer-leader, `locknode members transfer-leader`).
type TransferRequest struct {
	// ID is the voter to become leader; empty lets raft pick the most up
	// to date voter.
	ID string `json:"id,omitempty"`
}

// TransferResult is what a leadership transfer did.
type TransferResult struct {
	Previous string `json:"previous"` // the leader that handed over
	Leader   string `json:"leader"`   // the new leader, as the previous one heard of it
}
