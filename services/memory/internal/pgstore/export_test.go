package pgstore

// ComposeSQL exposes the compose-window statement to the plan test.
func ComposeSQL() string { return composeSQL }
