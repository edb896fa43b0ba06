package client

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWritesAreRetriedOnlyWhileTheWebhooksCannotBeCalled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	unreachable := apierrors.NewInternalError(errors.New(`failed calling webhook "validate.cluster.flotilla.dev": failed to call webhook: Post "https://127.0.0.1:4242/validate": dial tcp 127.0.0.1:4242: connect: connection refused`))

	calls := 0
	err := retryWebhook(ctx, func() error {
		if calls++; calls < 3 {
			return unreachable
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(3), "the manager came back: the write went through")

	denied := apierrors.NewForbidden(schema.GroupResource{Group: "cluster.flotilla.dev", Resource: "clusters"}, "w1", errors.New("admission webhook denied the request"))
	calls = 0
	err = retryWebhook(ctx, func() error { calls++; return denied })
	g.Expect(err).To(Equal(error(denied)), "a webhook that answered is not asked again")
	g.Expect(calls).To(Equal(1))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = retryWebhook(cancelled, func() error { return unreachable })
	g.Expect(err).To(Equal(error(unreachable)))
}
