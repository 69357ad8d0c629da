/*
 * tests/tls_fixture.h — key material for tls+tcp:// in tests and benchmarks
 * (tests/e2e/tenants.c, bench/transfer.c): never used outside them.
 */
#ifndef GPUD_TESTS_TLS_FIXTURE_H
#define GPUD_TESTS_TLS_FIXTURE_H

/* A self-signed certificate (CN=localhost, IP 127.0.0.1, EC P-256, valid to
 * 2126) for the tls+tcp:// tests, and another that did not sign it. */
static const char test_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUQhUT6joIZ6dzgyinZmSomb6UF6cwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjE1OVoYDzIxMjYxMDI4\n"
	"MDcyMTU5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIWvs8XIHYjSFt+B6YeQurgw8Y/\n"
	"vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtNo28wbTAdBgNVHQ4EFgQU5KhkAZKLCxkQ\n"
	"q/OTOK9ShP1SXT0wHwYDVR0jBBgwFoAU5KhkAZKLCxkQq/OTOK9ShP1SXT0wDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgQjpjO8JHfC9AguRJ3ADw4UfhZpMBQDc8hEs3vIxdXIACIQCn\n"
	"ViXNkSNa+JGFtY6+1pUvIrPjguoywDpnRegSApE07w==\n"
	"-----END CERTIFICATE-----\n";
static const char test_tls_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtWLULh1ok4h1Eas+\n"
	"fVFGjWUJ0udkGgMd/8fTM4HMoeyhRANCAAR/j/lQzRcfoJFasTISDyVdwZZVuhIW\n"
	"vs8XIHYjSFt+B6YeQurgw8Y/vpN7tF2pYPfGiT/Hl5QXKuf3Teex6VtN\n"
	"-----END PRIVATE KEY-----\n";
static const char other_tls_cert[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBmzCCAUGgAwIBAgIUa6Zpxjbm+KN3h2BnoFSTNstPtBQwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyMTA3MjIyM1oYDzIxMjYxMDI4\n"
	"MDcyMjIzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAASD7m6mCuUGi5OxqQ2Q+8I06xjaWfGGI6qZvI/9ZtDmFQdDZk3SVLCH\n"
	"22bRyM1S729DszO92d1Gm12dcwJs96xko28wbTAdBgNVHQ4EFgQURCD3ndQpkXsb\n"
	"I/pDnz3wIH0kRfswHwYDVR0jBBgwFoAURCD3ndQpkXsbI/pDnz3wIH0kRfswDwYD\n"
	"VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI\n"
	"zj0EAwIDSAAwRQIgZ3C8A3Wwu0lE++4yTvflcwMMKhbmZUt8xrpZ90jTzKACIQDo\n"
	"okCpW4r9QcXO6TjQe72OFiPi621dcIOnomghAAlHVg==\n"
	"-----END CERTIFICATE-----\n";

#endif
