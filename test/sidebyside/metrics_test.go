package sidebyside

import (
	"bytes"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseMetrics parses a Prometheus text exposition; what precedes a parse error is kept.
func parseMetrics(text []byte) map[string]*dto.MetricFamily {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, _ := p.TextToMetricFamilies(bytes.NewReader(text))
	return fams
}

// gaugeValue returns the value of an unlabelled gauge; 0 when it is absent.
func gaugeValue(fams map[string]*dto.MetricFamily, name string) float64 {
	for _, m := range fams[name].GetMetric() {
		if len(m.GetLabel()) == 0 {
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// writeRequests is the sum of client-go's rest_client_requests_total over the methods that
// write (POST, PATCH, PUT): binds, status updates and events; 0 when absent.
func writeRequests(fams map[string]*dto.MetricFamily) float64 {
	var n float64
	for _, m := range fams["rest_client_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" && (l.GetValue() == "POST" || l.GetValue() == "PATCH" || l.GetValue() == "PUT") {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
