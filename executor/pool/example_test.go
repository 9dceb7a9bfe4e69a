package pool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmbox/wasmbox/executor/pool"
)

func Example() {
	p := pool.New(pool.Config{InteractiveWorkers: 2, MaxQueue: 10})
	defer p.Shutdown(context.Background())

	res, err := p.Submit(context.Background(), pool.Job{
		Session: "agent-1",
		Label:   "echo",
		Run: func(ctx context.Context) error {
			fmt.Println("hello from the interactive lane")
			return nil
		},
	})
	fmt.Println(res.Lane, err)

	p.SetMode(pool.Disabled)
	_, err = p.Submit(context.Background(), pool.Job{Run: func(context.Context) error { return nil }})
	fmt.Println(errors.Is(err, pool.ErrDisabled))
	// Output:
	// hello from the interactive lane
	// interactive <nil>
	// true
}
