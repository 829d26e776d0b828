#!/bin/sh
# The implementation calls nothing from the C library beyond the short
# list kctl.h's doc block documents (LIBC): it is compiled alone into an
# object, in the default build and with every trim switch, and `nm -u`
# must name only functions of that list. With KCTL_NO_FLOAT it must also
# compile with -mgeneral-regs-only (gcc on x86: any floating point is an
# error). Usage: tests/libc_check.sh <cc> <scratch dir>
CC=${1:-gcc}
DIR=${2:-build}
# kctl.h, LIBC: memory and strings; malloc and free only as KCTL_MALLOC and
# KCTL_FREE's defaults; abort in debug builds only; then the POSIX port (clock, sleep, errno; threads;
# the manager's signals; files, unless KCTL_NO_FILES).
CORE="abort malloc free memcpy memmove memset memcmp memchr strlen strcmp strncmp strchr strrchr"
PORT="clock_gettime nanosleep __errno_location errno sysconf sched_getaffinity __sched_cpucount"
THREADS="pthread_create pthread_join pthread_attr_init pthread_attr_destroy pthread_attr_setstacksize pthread_mutex_init pthread_mutex_destroy pthread_mutex_lock pthread_mutex_unlock
 pthread_cond_init pthread_cond_destroy pthread_cond_wait pthread_cond_timedwait pthread_cond_signal pthread_cond_broadcast
 pthread_condattr_init pthread_condattr_destroy pthread_condattr_setclock sched_yield
 pthread_sigmask sigemptyset sigaddset sigtimedwait"
FILES="open close read write fstat lstat fsync ftruncate readlink rename unlink"
# what a compiler may call on its own (stack protector, libgcc)
CCRT="__stack_chk_fail __stack_chk_guard"
status=0
check() { # name, allowed, flags...
    name=$1; allowed=$2; shift 2
    if ! $CC -std=c99 -D_POSIX_C_SOURCE=200809L -Os -ffunction-sections "$@" -DKCTL_IMPLEMENTATION -x c -c kctl.h -o "$DIR/libc-$name.o"; then
        echo "libc-check $name: does not compile"; status=1; return
    fi
    bad=$(nm -u "$DIR/libc-$name.o" | awk '{print $NF}' | sed 's/@.*//' | while read -r sym; do
        case " $(echo $allowed $CCRT) " in *" $sym "*) ;; *) echo "$sym" ;; esac
    done)
    if [ -n "$bad" ]; then echo "libc-check $name: outside kctl.h's LIBC list:" $bad; status=1
    else echo "libc-check $name: ok"; fi
}
check default "$CORE $PORT $THREADS $FILES"
check nothreads "$CORE $PORT $FILES" -DKCTL_NO_THREADS
SMALLSW="-DKCTL_NO_THREADS -DKCTL_NO_FILES -DKCTL_NO_FLOAT -DKCTL_NO_LEADER -DKCTL_NO_METRICS -DKCTL_NO_SELECTORS -DKCTL_NO_CHECKPOINT
 -DKCTL_NO_MERGE_PATCH -DKCTL_NO_VALIDATION -DKCTL_NO_LOG_STRINGS -DKCTL_NO_PAGING -DKCTL_NO_FAULTS -DKCTL_NO_INDEXES -DKCTL_NO_OFFLINE
 -DKCTL_NO_HOLD_BACKOFF -DKCTL_NO_HOT_LOOP -DKCTL_NO_QUEUE_PRIORITY -DKCTL_NO_PENDING_MODES -DKCTL_NO_DURATIONS -DKCTL_NO_PREDICATES -DKCTL_NO_RESYNC
 -DKCTL_NO_TRANSFORM -DKCTL_NO_QUEUE_BOUND -DKCTL_NO_GENERATE_NAME -DKCTL_NO_MEMSTORE_BOUND -DKCTL_NO_CODEC"
# the minimal controller's build (make size), and every trim switch (-Os: KCTL_SMALL too)
check minimal "$CORE $PORT" $SMALLSW
check trimmed "$CORE $PORT" $SMALLSW -DKCTL_NO_MEMSTORE
case "$(uname -m)" in
x86_64|i?86)
    if $CC -std=c99 -D_POSIX_C_SOURCE=200809L -mgeneral-regs-only -DKCTL_NO_FLOAT -DKCTL_IMPLEMENTATION -x c -c kctl.h -o "$DIR/libc-nofloat.o"; then
        echo "libc-check nofloat: no floating point"
    else echo "libc-check nofloat: floating point with KCTL_NO_FLOAT"; status=1; fi ;;
esac
exit $status
