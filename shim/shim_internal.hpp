// shim_internal.hpp: what the shim's C++ files share (not part of the C ABI): the objects
// behind the opaque handles, the thread-local error text and the one catch-all guard.
#ifndef DPCTL_MEMORY_SHIM_INTERNAL_HPP
#define DPCTL_MEMORY_SHIM_INTERNAL_HPP

#include "dpctl_memory_shim.h"

#include <sycl/sycl.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct dpm_device_s {
  sycl::device dev;
};

struct dpm_context_s {
  sycl::context ctx;
};

namespace dpm_detail {

// Asynchronous errors of one queue, filled by its async handler (which SYCL calls from
// wait_and_throw / throw_asynchronous on the waiting thread) and taken by the next
// synchronous entry point. SYCL's default handler would print and std::terminate().
struct AsyncErrors {
  std::mutex lock;
  std::vector<std::exception_ptr> errors;

  void push(std::exception_ptr e) {
    std::lock_guard<std::mutex> guard(lock);
    errors.push_back(std::move(e));
  }

  // Rethrows the first stored error (dropping the others), if any.
  void rethrow_first() {
    std::exception_ptr first;
    {
      std::lock_guard<std::mutex> guard(lock);
      if (errors.empty()) return;
      first = errors.front();
      errors.clear();
    }
    std::rethrow_exception(first);
  }
};

// Thread-local error text: a fixed buffer, so that recording an error never allocates
// and never throws.
constexpr size_t kErrorCap = 2048;
inline thread_local char t_error[kErrorCap] = {0};

inline void set_error(const char *text) noexcept {
  if (text == nullptr) text = "(no message)";
  std::snprintf(t_error, kErrorCap, "%s", text);
}

inline void set_error(const std::string &text) noexcept { set_error(text.c_str()); }

inline void clear_error() noexcept { t_error[0] = '\0'; }

// Carries a DPM_ERR_* status of the shim's own out of a guarded body.
struct StatusError : std::exception {
  int status;
  std::string message;
  StatusError(int s, std::string m) : status(s), message(std::move(m)) {}
  const char *what() const noexcept override { return message.c_str(); }
};

[[noreturn]] inline void fail(int status, std::string message) { throw StatusError(status, std::move(message)); }

// The one catch-all guard. `body` returns nothing; it reports failure by throwing.
template <class F>
int guard(F &&body) noexcept {
  clear_error();
  try {
    body();
    return DPM_OK;
  } catch (const StatusError &e) {
    set_error(e.message);
    return e.status;
  } catch (const sycl::exception &e) {
    try {
      std::string text = e.what();
      text += " (SYCL error code ";
      text += std::to_string(e.code().value());
      text += ": ";
      text += e.code().message();
      text += ")";
      set_error(text);
    } catch (...) {
      set_error(e.what());
    }
    return DPM_ERR_SYCL;
  } catch (const std::exception &e) {
    set_error(e.what());
    return DPM_ERR_STD;
  } catch (...) {
    set_error("an unknown C++ exception was thrown inside the SYCL runtime");
    return DPM_ERR_UNKNOWN;
  }
}

template <class T>
void require(const T *p, const char *what) {
  if (p == nullptr) fail(DPM_ERR_ARG, std::string(what) + " is NULL");
}

}  // namespace dpm_detail

struct dpm_queue_s {
  std::shared_ptr<dpm_detail::AsyncErrors> errors;
  sycl::queue q;
  int properties;  // DPM_QUEUE_* flags it was made with
  // The queue's context and device, kept so that their addresses stay valid for other
  // addons (dpm_queue_native) as long as the queue handle lives.
  sycl::context ctx;
  sycl::device dev;
  // dpm_submit_wait's in-order queue of the same context and device (out-of-order queues
  // without profiling only), made at its first use. A mutex, not std::call_once: that
  // needs pthread_once of glibc 2.34, above the runtime's glibc floor.
  std::mutex lane_mutex;
  std::optional<sycl::queue> lane;
};

namespace dpm_detail {

// Waits for `waitable` (an event, or a whole queue), then throws the first error q's
// async handler collected: an earlier async error, if any, is the root cause.
template <class Waitable>
void wait_and_report(dpm_queue_s *q, Waitable &&waitable) {
  try {
    waitable.wait_and_throw();
  } catch (...) {
    q->errors->rethrow_first();
    throw;
  }
  q->errors->rethrow_first();
}

}  // namespace dpm_detail

#endif  // DPCTL_MEMORY_SHIM_INTERNAL_HPP
