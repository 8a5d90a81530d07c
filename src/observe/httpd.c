/* The HTTP endpoints' shared reply (see observe/httpd.h). */
#include "observe/httpd.h"

#include <stdlib.h>

enum MHD_Result gs_http_reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body, size_t len,
                              bool owned)
{
        struct MHD_Response *r =
                MHD_create_response_from_buffer(len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (r == NULL) {
                if (owned)
                        free(body);
                return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        enum MHD_Result rc = MHD_queue_response(conn, status, r);
        MHD_destroy_response(r);
        return rc;
}
