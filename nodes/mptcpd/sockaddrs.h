// Socket addresses (IPv4 or IPv6) for the rig's mptcpd plugin (rig_pm.c): copies, ports,
// comparisons and printing.
#ifndef RIG_PM_SOCKADDRS_H
#define RIG_PM_SOCKADDRS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

static inline socklen_t sa_len(struct sockaddr const *sa)
{
        return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static inline void sa_copy(struct sockaddr_storage *to, struct sockaddr const *from, bool port)
{
        memset(to, 0, sizeof(*to));
        memcpy(to, from, sa_len(from));
        if (!port) {
                if (from->sa_family == AF_INET6)
                        ((struct sockaddr_in6 *) to)->sin6_port = 0;
                else
                        ((struct sockaddr_in *) to)->sin_port = 0;
        }
}

static inline in_port_t sa_port(struct sockaddr const *sa)
{
        return sa->sa_family == AF_INET6 ? ((struct sockaddr_in6 const *) sa)->sin6_port
                                         : ((struct sockaddr_in const *) sa)->sin_port;
}

static inline void sa_set_port(struct sockaddr_storage *sa, in_port_t port)
{
        if (sa->ss_family == AF_INET6)
                ((struct sockaddr_in6 *) sa)->sin6_port = port;
        else
                ((struct sockaddr_in *) sa)->sin_port = port;
}

// Same family and address, ports ignored.
static inline bool sa_same_host(struct sockaddr const *a, struct sockaddr const *b)
{
        if (a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET6)
                return !memcmp(&((struct sockaddr_in6 const *) a)->sin6_addr,
                               &((struct sockaddr_in6 const *) b)->sin6_addr, sizeof(struct in6_addr));
        return ((struct sockaddr_in const *) a)->sin_addr.s_addr == ((struct sockaddr_in const *) b)->sin_addr.s_addr;
}

static inline bool sa_same(struct sockaddr const *a, struct sockaddr const *b)
{
        return sa_same_host(a, b) && sa_port(a) == sa_port(b);
}

static inline char const *sa_str(struct sockaddr const *sa, char *buf, size_t n)
{
        void const *a = sa->sa_family == AF_INET6 ? (void const *) &((struct sockaddr_in6 const *) sa)->sin6_addr
                                                  : (void const *) &((struct sockaddr_in const *) sa)->sin_addr;
        return inet_ntop(sa->sa_family, a, buf, n) ? buf : "?";
}

#define SA(x) ((struct sockaddr const *) (x))

#endif
