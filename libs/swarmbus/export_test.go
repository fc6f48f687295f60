package swarmbus

// LogConnectAttemptFailed is the log message of a failed attempt to reach NATS; tests wait for it.
const LogConnectAttemptFailed = logConnectAttemptFailed
