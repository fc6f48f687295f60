package natstest

// User is a client a server with Options.Users admits: its credentials and the subjects it may publish and
// subscribe to (empty allow lists allow everything, as in a nats-server authorization block).
type User struct {
	Name, Password                string
	PublishAllow, PublishDeny     []string
	SubscribeAllow, SubscribeDeny []string
}
