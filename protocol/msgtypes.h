/* Message type numbers and error codes of docs/PROTOCOL.md (sections 3, 4, 8). */
#ifndef CELLVM_MSGTYPES_H
#define CELLVM_MSGTYPES_H

#include <stdint.h>

enum cv_msg_type {
        /* client -> agent requests */
        CV_MSG_HELLO = 0x0001,
        CV_MSG_PING = 0x0002,
        CV_MSG_CANCEL = 0x0003,
        CV_MSG_EXECUTE = 0x0010,
        CV_MSG_INTERRUPT = 0x0011,
        CV_MSG_CONTEXT_CREATE = 0x0020,
        CV_MSG_CONTEXT_LIST = 0x0021,
        CV_MSG_CONTEXT_RESTART = 0x0022,
        CV_MSG_CONTEXT_REMOVE = 0x0023,
        CV_MSG_SET_TIME = 0x0030,
        CV_MSG_ADD_ENTROPY = 0x0031,
        CV_MSG_SHUTDOWN = 0x0032,
        CV_MSG_SET_DEADLINE = 0x0033,
        CV_MSG_SNAPSHOT_PREPARE = 0x0034,
        CV_MSG_NEW_GENERATION = 0x0035,
        CV_MSG_SYS_STATS = 0x0036,
        /* agent -> client */
        CV_MSG_OK = 0x8000,
        CV_MSG_ERROR = 0x8001,
        CV_MSG_EXEC_INPUT = 0x8010,
        CV_MSG_STREAM = 0x8011,
        CV_MSG_DISPLAY = 0x8012,
        CV_MSG_RESULT = 0x8013,
        CV_MSG_EXEC_ERROR = 0x8014,
        /* files service (section 9) */
        CV_MSG_FILE_WRITE = 0x0100,
        CV_MSG_FILE_DATA = 0x0101,
        CV_MSG_FILE_READ = 0x0102,
        CV_MSG_FILE_LIST = 0x0103,
        CV_MSG_FILE_STAT = 0x0104,
        CV_MSG_FILE_REMOVE = 0x0105,
        CV_MSG_FILE_RENAME = 0x0106,
        CV_MSG_FILE_MKDIR = 0x0107,
        CV_MSG_FILE_WATCH = 0x0108,
        CV_MSG_FILE_CHUNK = 0x8100,
        CV_MSG_FILE_EVENT = 0x8101,
        CV_MSG_WATCH_STARTED = 0x8102,
        /* commands service (section 10) */
        CV_MSG_CMD_START = 0x0200,
        CV_MSG_CMD_LIST = 0x0201,
        CV_MSG_CMD_KILL = 0x0202,
        CV_MSG_CMD_STDIN = 0x0203,
        CV_MSG_CMD_CONNECT = 0x0204,
        CV_MSG_CMD_RESIZE = 0x0205,
        CV_MSG_CMD_STARTED = 0x8200,
        CV_MSG_CMD_OUTPUT = 0x8201,
        /* ports service (section 12) */
        CV_MSG_PORT_OPEN = 0x0300,
        CV_MSG_PORT_DATA = 0x0301,
        CV_MSG_PORT_OPENED = 0x8300,
        CV_MSG_PORT_DATA_OUT = 0x8301,
        /* egress service (section 13): streams the guest opens, carried as PORT_DATA */
        CV_MSG_EGRESS_ACCEPT = 0x0400,
        CV_MSG_EGRESS_OPENED = 0x8400,
        /* inside the guest only: agent <-> zygote <-> executor */
        CV_MSG_Z_READY = 0x4001,
        CV_MSG_Z_SPAWN = 0x4002,
        CV_MSG_Z_SPAWNED = 0x4003,
        CV_MSG_X_READY = 0x4010,
        CV_MSG_X_EXECUTE = 0x4011,
        CV_MSG_X_END = 0x4012,
        /* A warm Node.js spare's assignment (zygote -> driver) and its answer. */
        CV_MSG_X_ASSIGN = 0x4030,
        CV_MSG_X_ASSIGNED = 0x4031,
};

/* Reserved ranges (section 4). */
#define CV_MSG_FILES_FIRST 0x0100u
#define CV_MSG_FILES_LAST 0x01FFu
#define CV_MSG_COMMANDS_FIRST 0x0200u
#define CV_MSG_COMMANDS_LAST 0x02FFu
#define CV_MSG_PORTS_FIRST 0x0300u
#define CV_MSG_PORTS_LAST 0x03FFu
#define CV_MSG_EGRESS_FIRST 0x0400u
#define CV_MSG_EGRESS_LAST 0x04FFu
#define CV_MSG_INTERNAL_FIRST 0x4000u
#define CV_MSG_INTERNAL_LAST 0x7FFFu
/* Types at or above this come from the agent. */
#define CV_MSG_FROM_AGENT 0x8000u

/* A tunnel's window (section 12): PORT_DATA bytes a side may send that the other
 * has not acknowledged. */
#define CV_PORT_WINDOW (256u * 1024u)

/* ERROR codes (section 3). */
#define CV_ERR_BAD_FRAME "bad_frame"
#define CV_ERR_BAD_REQUEST "bad_request"
#define CV_ERR_UNKNOWN_TYPE "unknown_type"
#define CV_ERR_HANDSHAKE_REQUIRED "handshake_required"
#define CV_ERR_UNSUPPORTED_VERSION "unsupported_version"
#define CV_ERR_DUPLICATE_ID "duplicate_id"
#define CV_ERR_NOT_FOUND "not_found"
#define CV_ERR_CANCELLED "cancelled"
#define CV_ERR_TIMEOUT "timeout"
#define CV_ERR_TOO_LARGE "too_large"
#define CV_ERR_BUSY "busy"
#define CV_ERR_INTERNAL "internal"
/* A request that needs a generation came after SNAPSHOT_PREPARE (section 11). */
#define CV_ERR_NO_GENERATION "no_generation"

/* Returns the spec name of `type` ("HELLO", "X_END", ...) or "UNKNOWN", for logs. */
const char *cv_msg_type_name(uint16_t type);

/* True for the terminal types OK and ERROR. */
static inline int cv_msg_is_terminal(uint16_t type)
{
        return type == CV_MSG_OK || type == CV_MSG_ERROR;
}

#endif
