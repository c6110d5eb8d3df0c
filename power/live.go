// SPDX-License-Identifier: Apache-2.0

package power

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Live providers of grid carbon intensity. Both answer in gCO2e/kWh.

// ElectricityMapsTokenEnv names the environment variable holding the
// Electricity Maps API token (kept out of flags so it is not in ps output).
const ElectricityMapsTokenEnv = "JOBSCOPE_ELECTRICITYMAPS_TOKEN"

// Default endpoints; tests and proxies override them.
const (
	ElectricityMapsURL = "https://api.electricitymap.org"
	RTEURL             = "https://odre.opendatasoft.com"
)

// maxBody bounds what is read of an answer.
const maxBody = 1 << 20

// Factor is a live carbon intensity and the time it is valid for.
type Factor struct {
	GramsPerKWh float64
	At          time.Time // the provider's timestamp (zero when not given)
}

// ElectricityMaps fetches /v3/carbon-intensity/latest for a zone.
func ElectricityMaps(client *http.Client, base, zone, token string) func(ctx context.Context) (Factor, error) {
	return func(ctx context.Context) (Factor, error) {
		u := base + "/v3/carbon-intensity/latest?zone=" + url.QueryEscape(zone)
		var body struct {
			CarbonIntensity *float64 `json:"carbonIntensity"`
			Datetime        string   `json:"datetime"`
		}
		if err := getJSON(ctx, client, u, map[string]string{"auth-token": token}, &body); err != nil {
			return Factor{}, fmt.Errorf("electricitymaps: %w", err)
		}
		if body.CarbonIntensity == nil || *body.CarbonIntensity < 0 {
			return Factor{}, errors.New("electricitymaps: answer without a carbonIntensity")
		}
		at, _ := time.Parse(time.RFC3339, body.Datetime)
		return Factor{GramsPerKWh: *body.CarbonIntensity, At: at}, nil
	}
}

// RTE fetches the latest taux_co2 of RTE's eCO2mix national real-time data
// set (France) from the ODRÉ open-data portal; no token is needed.
func RTE(client *http.Client, base string) func(ctx context.Context) (Factor, error) {
	return func(ctx context.Context) (Factor, error) {
		q := url.Values{}
		q.Set("select", "date_heure,taux_co2")
		q.Set("where", "taux_co2 is not null")
		q.Set("order_by", "date_heure desc")
		q.Set("limit", "1")
		u := base + "/api/explore/v2.1/catalog/datasets/eco2mix-national-tr/records?" + q.Encode()
		var body struct {
			Results []struct {
				DateHeure string   `json:"date_heure"`
				TauxCO2   *float64 `json:"taux_co2"`
			} `json:"results"`
		}
		if err := getJSON(ctx, client, u, nil, &body); err != nil {
			return Factor{}, fmt.Errorf("rte eco2mix: %w", err)
		}
		if len(body.Results) == 0 || body.Results[0].TauxCO2 == nil || *body.Results[0].TauxCO2 < 0 {
			return Factor{}, errors.New("rte eco2mix: answer without taux_co2")
		}
		at, _ := time.Parse(time.RFC3339, body.Results[0].DateHeure)
		return Factor{GramsPerKWh: *body.Results[0].TauxCO2, At: at}, nil
	}
}

func getJSON(ctx context.Context, client *http.Client, u string, header map[string]string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	for k, val := range header {
		req.Header.Set(k, val)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody)) // lets the connection be reused
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(v); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	return nil
}
