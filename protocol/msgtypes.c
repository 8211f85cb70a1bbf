#include "msgtypes.h"

const char *cv_msg_type_name(uint16_t type)
{
        switch (type) {
        case CV_MSG_HELLO:
                return "HELLO";
        case CV_MSG_PING:
                return "PING";
        case CV_MSG_CANCEL:
                return "CANCEL";
        case CV_MSG_EXECUTE:
                return "EXECUTE";
        case CV_MSG_INTERRUPT:
                return "INTERRUPT";
        case CV_MSG_CONTEXT_CREATE:
                return "CONTEXT_CREATE";
        case CV_MSG_CONTEXT_LIST:
                return "CONTEXT_LIST";
        case CV_MSG_CONTEXT_RESTART:
                return "CONTEXT_RESTART";
        case CV_MSG_CONTEXT_REMOVE:
                return "CONTEXT_REMOVE";
        case CV_MSG_OK:
                return "OK";
        case CV_MSG_ERROR:
                return "ERROR";
        case CV_MSG_EXEC_INPUT:
                return "EXEC_INPUT";
        case CV_MSG_STREAM:
                return "STREAM";
        case CV_MSG_DISPLAY:
                return "DISPLAY";
        case CV_MSG_RESULT:
                return "RESULT";
        case CV_MSG_EXEC_ERROR:
                return "EXEC_ERROR";
        case CV_MSG_Z_READY:
                return "Z_READY";
        case CV_MSG_Z_SPAWN:
                return "Z_SPAWN";
        case CV_MSG_Z_SPAWNED:
                return "Z_SPAWNED";
        case CV_MSG_X_READY:
                return "X_READY";
        case CV_MSG_X_EXECUTE:
                return "X_EXECUTE";
        case CV_MSG_X_END:
                return "X_END";
        }
        return "UNKNOWN";
}
