// Package svcprops is the storage services' properties document (Get and
// Set Blob, Queue and Table Service Properties), written once for the
// three: the analytics elements kept as the client sent them, the CORS
// rules parsed for package cors to apply, and Set's merge, where the
// elements a body holds replace the stored ones and those it leaves out
// stay (as Set Blob and Set Queue Service Properties document it).
package svcprops

import (
	"encoding/xml"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/cors"
)

// Properties is a StorageServiceProperties document. A nil element is
// left out when written, and left as stored by Merge.
type Properties struct {
	XMLName       xml.Name    `xml:"StorageServiceProperties"`
	Logging       *Raw        `xml:"Logging"`
	HourMetrics   *Raw        `xml:"HourMetrics"`
	MinuteMetrics *Raw        `xml:"MinuteMetrics"`
	Cors          *cors.Rules `xml:"Cors"`
	// The Blob service's own elements. DefaultServiceVersion is kept and
	// returned; the emulator answers each request in the version it asks
	// for.
	DefaultServiceVersion *string `xml:"DefaultServiceVersion"`
	DeleteRetain          *Raw    `xml:"DeleteRetentionPolicy"`
	StaticWebsite         *Raw    `xml:"StaticWebsite"`
}

// Raw is an element's content, kept as sent.
type Raw struct {
	Inner []byte `xml:",innerxml"`
}

// Defaults returns a new account's properties: analytics off and no CORS
// rules; with blob, also soft delete and static websites off.
func Defaults(blob bool) Properties {
	p := Properties{
		Logging:       &Raw{[]byte(`<Version>1.0</Version><Delete>false</Delete><Read>false</Read><Write>false</Write><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		HourMetrics:   &Raw{[]byte(`<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		MinuteMetrics: &Raw{[]byte(`<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		Cors:          &cors.Rules{},
	}
	if blob {
		p.DeleteRetain = &Raw{[]byte(`<Enabled>false</Enabled>`)}
		p.StaticWebsite = &Raw{[]byte(`<Enabled>false</Enabled>`)}
	}
	return p
}

// Parse reads a Set Service Properties body: 400 InvalidXmlDocument when
// it is not the document, or holds more than cors.MaxRules CORS rules.
func Parse(body []byte) (Properties, *answer.Error) {
	var p Properties
	if xml.Unmarshal(body, &p) != nil || (p.Cors != nil && len(p.Cors.Rules) > cors.MaxRules) {
		return Properties{}, answer.InvalidXMLDocument()
	}
	return p, nil
}

// Merge replaces p's elements with those set in upd; the others stay.
func (p *Properties) Merge(upd Properties) {
	for _, f := range []struct{ to, from **Raw }{
		{&p.Logging, &upd.Logging}, {&p.HourMetrics, &upd.HourMetrics},
		{&p.MinuteMetrics, &upd.MinuteMetrics}, {&p.DeleteRetain, &upd.DeleteRetain},
		{&p.StaticWebsite, &upd.StaticWebsite},
	} {
		if *f.from != nil {
			*f.to = *f.from
		}
	}
	if upd.Cors != nil {
		p.Cors = upd.Cors
	}
	if upd.DefaultServiceVersion != nil {
		p.DefaultServiceVersion = upd.DefaultServiceVersion
	}
}

// CorsRules returns p's CORS rules, nil when it has none.
func (p *Properties) CorsRules() []cors.Rule {
	if p.Cors == nil {
		return nil
	}
	return p.Cors.Rules
}
