/*
 * libFuzzer target: what libcellvm does with bytes from a (hostile) guest.
 * The stream goes through the frame reader; every complete message is decoded
 * as its own type and, to reach every decoder with every body, as each agent
 * message type in turn.
 */
#include <stddef.h>
#include <stdint.h>

#include "cellvm.h"
#include "msgtypes.h"
#include "reader.h"

static const uint16_t types[] = {CV_MSG_OK,      CV_MSG_ERROR,  CV_MSG_EXEC_INPUT, CV_MSG_STREAM,
                                 CV_MSG_DISPLAY, CV_MSG_RESULT, CV_MSG_EXEC_ERROR};

static void use_event(const struct cvc_event *ev)
{
        volatile size_t sink = 0;
        if (ev->type == CV_MSG_DISPLAY || ev->type == CV_MSG_RESULT)
                for (size_t i = 0; i < ev->u.display.nmime; i++)
                        sink +=
                            ev->u.display.mime[i].len +
                            (ev->u.display.mime[i].data ? ev->u.display.mime[i].data[0] * 0u : 0u) +
                            ev->u.display.mime[i].mime[0];
        if (ev->type == CV_MSG_EXEC_ERROR)
                for (size_t i = 0; i < ev->u.error.ntb; i++)
                        sink += ev->u.error.tb_len[i];
        (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cv_reader r;
        cv_reader_init(&r, 1u << 20);
        size_t off = 0;
        while (off < size) {
                size_t used = 0;
                struct cv_msg msg;
                int rc = cv_reader_feed(&r, data + off, size - off, &used, &msg);
                off += used;
                if (rc != CV_READ_MSG)
                        break;
                struct cvc_event ev;
                if (cvc_event_decode(msg.type, msg.id, msg.body, msg.len, &ev) == 0) {
                        use_event(&ev);
                        cvc_event_free(&ev);
                }
                for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
                        if (cvc_event_decode(types[t], msg.id, msg.body, msg.len, &ev) == 0) {
                                use_event(&ev);
                                cvc_event_free(&ev);
                        }
                }
        }
        cv_reader_free(&r);
        return 0;
}
