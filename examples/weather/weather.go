// Package weather is a small client for a forecast API. It is the demo suite
// of nettrap's README: run it with scripts/demo.sh.
package weather

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultBaseURL is where the forecast API lives. It is a documentation
// address (RFC 5737) standing in for a real service: scripts/demo.sh serves
// it from a fake inside a private network namespace.
const DefaultBaseURL = "http://203.0.113.80"

// Client calls the forecast API.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// New returns a client for the real API.
func New() *Client {
	return &Client{BaseURL: DefaultBaseURL, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// Forecast is the API's answer for one city.
type Forecast struct {
	City    string  `json:"city"`
	TempC   float64 `json:"temp_c"`
	Summary string  `json:"summary"`
}

// Forecast asks for today's forecast for city.
func (c *Client) Forecast(ctx context.Context, city string) (Forecast, error) {
	u := c.BaseURL + "/v1/forecast?city=" + url.QueryEscape(city)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Forecast{}, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Forecast{}, fmt.Errorf("forecast for %s: %w", city, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Forecast{}, fmt.Errorf("forecast for %s: %s", city, resp.Status)
	}
	var f Forecast
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		return Forecast{}, fmt.Errorf("forecast for %s: %w", city, err)
	}
	return f, nil
}
