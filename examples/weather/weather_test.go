package weather

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fakeAPI serves the forecast API on loopback, the way tests should.
func fakeAPI(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Client{BaseURL: srv.URL, HTTP: srv.Client()}
}

func TestForecast(t *testing.T) {
	c := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/forecast" || r.URL.Query().Get("city") != "Oslo" {
			t.Errorf("request %s, want /v1/forecast?city=Oslo", r.URL)
		}
		w.Write([]byte(`{"city":"Oslo","temp_c":-3.5,"summary":"snow"}`))
	})
	f, err := c.Forecast(context.Background(), "Oslo")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Forecast{City: "Oslo", TempC: -3.5, Summary: "snow"}); f != want {
		t.Fatalf("got %+v, want %+v", f, want)
	}
}

func TestForecastUnavailable(t *testing.T) {
	c := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	})
	if _, err := c.Forecast(context.Background(), "Oslo"); err == nil {
		t.Fatal("no error for 503")
	}
}

// TestForecastBergen forgot its mock: New() talks to the real API. It passes
// on a developer's laptop and fails (or hangs) in an offline CI job; under
// nettrap it fails everywhere, with the destination in the report.
func TestForecastBergen(t *testing.T) {
	f, err := New().Forecast(context.Background(), "Bergen")
	if err != nil {
		t.Fatal(err)
	}
	if f.City != "Bergen" {
		t.Fatalf("got %+v", f)
	}
}

// TestLiveForecast checks the real API on purpose. The marker tells nettrap
// to let it through (and to audit it).
func TestLiveForecast(t *testing.T) {
	t.Attr("nettrap", "network")
	f, err := New().Forecast(context.Background(), "Oslo")
	if err != nil {
		t.Fatal(err)
	}
	if f.City != "Oslo" || f.Summary == "" {
		t.Fatalf("got %+v", f)
	}
}
