package wherecgo

import (
	"testing"

	"example.com/fixtures/fx"
)

func TestCgo(t *testing.T) {
	_ = Dial(fx.External, 5008)
}
