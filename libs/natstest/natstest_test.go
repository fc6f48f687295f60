package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/natstest"
)

func TestJetStreamSurvivesRestartOnSameDir(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.StartDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv.WaitForShutdown()

	srv2 := natstest.StartDir(t, dir)
	nc2, err := nats.Connect(srv2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	s, err := js2.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "hello" {
		t.Fatalf("message lost across restart: %v %+v", err, msg)
	}
}
