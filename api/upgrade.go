package api

// UpgradeResult is what activating a newer cluster version did
// (POST /v1/cluster/upgrade, `locknode cluster upgrade`;
// docs/UPGRADING.md).
type UpgradeResult struct {
	// Before and ClusterVersion are the active cluster version before and
	// after; equal when there was nothing newer every member runs.
	Before         uint32 `json:"before"`
	ClusterVersion uint32 `json:"cluster_version"`
	// Members maps each member's id to the cluster versions its binary
	// runs ("1..2"), as it answered.
	Members map[string]string `json:"members"`
}
