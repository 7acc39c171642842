package errs

import (
	"errors"
	"testing"
)

func TestParseTransactionErrorBody(t *testing.T) {
	body := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n--changesetresponse_2\r\n" +
		"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\nContent-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n" +
		`{"odata.error":{"code":"ResourceNotFound","message":{"lang":"en-US","value":"12:The specified resource does not exist.\nRequestId:x"}}}` +
		"\r\n--changesetresponse_2--\r\n--batchresponse_1--\r\n"
	te := parseTransactionError([]byte(body))
	if te == nil || te.Index != 12 || te.StatusCode != 404 || te.Code != "ResourceNotFound" || te.Message != "The specified resource does not exist." {
		t.Fatalf("parseTransactionError = %+v", te)
	}
	if !errors.Is(te, ErrNotFound) {
		t.Error("does not wrap ErrNotFound")
	}
	ok := "--batchresponse_1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n--batchresponse_1--"
	if te := parseTransactionError([]byte(ok)); te != nil {
		t.Errorf("successful batch parsed as failure: %+v", te)
	}
}
