#include "loom/gui/background_job.hpp"

#include <QCoreApplication>
#include <QDeadlineTimer>

#include <exception>
#include <new>

namespace loom::gui {

BackgroundJob::BackgroundJob(QObject* parent) : QObject(parent) {}

BackgroundJob::~BackgroundJob() {
  cancel();
  if (thread_) thread_->wait();
}

bool BackgroundJob::start(Work work) {
  if (running()) return false;
  if (thread_) thread_->wait();
  cancelled_ = false;
  {
    std::lock_guard lock(error_mutex_);
    error_.clear();
  }
  thread_.reset(QThread::create([this, work = std::move(work)] {
    QString error;
    try {
      work(cancelled_);
    } catch (const std::bad_alloc&) {
      error = "out of memory";
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    std::lock_guard lock(error_mutex_);
    error_ = error;
  }));
  connect(thread_.get(), &QThread::finished, this, &BackgroundJob::finished, Qt::QueuedConnection);
  thread_->start();
  return true;
}

void BackgroundJob::cancel() { cancelled_ = true; }

bool BackgroundJob::running() const { return thread_ && thread_->isRunning(); }

bool BackgroundJob::wait(int milliseconds) {
  if (!thread_) return true;
  const bool ended = thread_->wait(milliseconds < 0 ? QDeadlineTimer(QDeadlineTimer::Forever) : QDeadlineTimer(milliseconds));
  if (ended) QCoreApplication::processEvents();
  return ended;
}

QString BackgroundJob::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

void BackgroundJob::post(std::function<void()> f) { QMetaObject::invokeMethod(this, std::move(f), Qt::QueuedConnection); }

}  // namespace loom::gui
