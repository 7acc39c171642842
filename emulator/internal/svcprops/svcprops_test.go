package svcprops_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

func TestSetKeepsWhatItLeavesOut(t *testing.T) {
	p := svcprops.Defaults(true)
	upd, e := svcprops.Parse([]byte(`<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders>*</AllowedHeaders><ExposedHeaders>*</ExposedHeaders><MaxAgeInSeconds>5</MaxAgeInSeconds></CorsRule></Cors></StorageServiceProperties>`))
	if e != nil {
		t.Fatal(e)
	}
	p.Merge(upd)
	doc, err := xml.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	got := string(doc)
	for _, want := range []string{
		"<HourMetrics><Version>1.0</Version><Enabled>true</Enabled>",    // replaced
		"<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>", // kept
		"<Logging><Version>1.0</Version><Delete>false</Delete>",         // kept
		"<StaticWebsite><Enabled>false</Enabled></StaticWebsite>",       // kept (blob)
		"<AllowedOrigins>*</AllowedOrigins>",                            // the rule
	} {
		if !strings.Contains(got, want) {
			t.Errorf("after Set: %s\nlacks %s", got, want)
		}
	}
	if len(p.CorsRules()) != 1 {
		t.Errorf("CorsRules: %d rules, want 1", len(p.CorsRules()))
	}
	if q := svcprops.Defaults(false); q.StaticWebsite != nil || q.DeleteRetain != nil {
		t.Error("the Table and Queue services' defaults hold the Blob service's elements")
	}
}

func TestParseRefuses(t *testing.T) {
	six := "<StorageServiceProperties><Cors>" + strings.Repeat("<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods><AllowedHeaders></AllowedHeaders><ExposedHeaders></ExposedHeaders><MaxAgeInSeconds>1</MaxAgeInSeconds></CorsRule>", 6) + "</Cors></StorageServiceProperties>"
	for name, body := range map[string]string{"not XML": "{", "six CORS rules": six} {
		if _, e := svcprops.Parse([]byte(body)); e == nil || e.Status != 400 {
			t.Errorf("%s: %v, want 400 InvalidXmlDocument", name, e)
		}
	}
}
