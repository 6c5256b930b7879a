/* The bind guard: keeps a TensorFlow server on the address it was given.
 *
 * TensorFlow's gRPC server always asks for the wildcard address
 * ("0.0.0.0:<port>", which gRPC turns into a dual-stack "[::]:<port>"), so
 * a server named "127.0.0.1:2222" in its cluster listens on every
 * interface of the machine. TensorFlow has no option to change that.
 *
 * This library, loaded with LD_PRELOAD, wraps the C library's bind(). When
 * the environment names an address and a port
 *
 *     ESTIMATOR_RT_BIND_ADDRESS=<numeric IPv4 or IPv6 address>
 *     ESTIMATOR_RT_BIND_PORT=<port>
 *
 * a bind of the wildcard address on that port is turned into a bind of the
 * named address on it (an IPv4 address on an IPv6 socket becomes its
 * IPv4-mapped form, ::ffff:a.b.c.d). Every other bind passes through
 * untouched. When the wildcard cannot be narrowed (an IPv6 address asked
 * of an IPv4 socket, a malformed setting) the bind fails with
 * EADDRNOTAVAIL rather than listen wider than asked.
 *
 * The variables are read at each call, so a process can set them (Python's
 * os.environ does) just before it starts its server.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_function)(int, const struct sockaddr *, socklen_t);

static bind_function next_bind(void) {
  static bind_function resolved = NULL;
  if (resolved == NULL) {
    resolved = (bind_function)dlsym(RTLD_NEXT, "bind");
  }
  return resolved;
}

/* The guarded port from the environment, or -1 when none (or malformed). */
static int guarded_port(void) {
  const char *text = getenv("ESTIMATOR_RT_BIND_PORT");
  if (text == NULL || *text == '\0') return -1;
  char *end = NULL;
  long port = strtol(text, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) return -1;
  return (int)port;
}

static int is_ipv4_wildcard(const struct sockaddr_in *address) {
  return address->sin_addr.s_addr == htonl(INADDR_ANY);
}

static int is_ipv6_wildcard(const struct sockaddr_in6 *address) {
  return memcmp(&address->sin6_addr, &in6addr_any, sizeof(in6addr_any)) == 0;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
  bind_function real_bind = next_bind();
  if (real_bind == NULL) {
    errno = ENOSYS;
    return -1;
  }
  int port = guarded_port();
  if (port < 0 || address == NULL) return real_bind(fd, address, length);

  int asks_wildcard = 0;
  if (address->sa_family == AF_INET && length >= sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)address;
    asks_wildcard = ntohs(in4->sin_port) == port && is_ipv4_wildcard(in4);
  } else if (address->sa_family == AF_INET6 &&
             length >= sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)address;
    asks_wildcard = ntohs(in6->sin6_port) == port && is_ipv6_wildcard(in6);
  }
  if (!asks_wildcard) return real_bind(fd, address, length);

  const char *wanted = getenv("ESTIMATOR_RT_BIND_ADDRESS");
  struct in_addr wanted4;
  struct in6_addr wanted6;
  int wants_ipv4 = wanted != NULL && inet_pton(AF_INET, wanted, &wanted4) == 1;
  int wants_ipv6 =
      !wants_ipv4 && wanted != NULL && inet_pton(AF_INET6, wanted, &wanted6) == 1;

  if (address->sa_family == AF_INET) {
    if (!wants_ipv4) {
      errno = EADDRNOTAVAIL;
      return -1;
    }
    struct sockaddr_in narrowed = *(const struct sockaddr_in *)address;
    narrowed.sin_addr = wanted4;
    return real_bind(fd, (const struct sockaddr *)&narrowed, sizeof(narrowed));
  }
  struct sockaddr_in6 narrowed = *(const struct sockaddr_in6 *)address;
  if (wants_ipv6) {
    narrowed.sin6_addr = wanted6;
  } else if (wants_ipv4) {
    /* ::ffff:a.b.c.d: a dual-stack socket then takes IPv4 connections to
     * a.b.c.d only. */
    memset(&narrowed.sin6_addr, 0, sizeof(narrowed.sin6_addr));
    narrowed.sin6_addr.s6_addr[10] = 0xff;
    narrowed.sin6_addr.s6_addr[11] = 0xff;
    memcpy(&narrowed.sin6_addr.s6_addr[12], &wanted4, sizeof(wanted4));
  } else {
    errno = EADDRNOTAVAIL;
    return -1;
  }
  return real_bind(fd, (const struct sockaddr *)&narrowed, sizeof(narrowed));
}
