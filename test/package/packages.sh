# SPDX-License-Identifier: Apache-2.0
# Sourced by test/package/run.sh: every package, file by file.
# The .deb is checked against the repository; the .rpm of the same build
# against the .deb (the same entries but /etc/sysconfig for /etc/default and
# no system directories, the same digests), so every file of both is
# accounted for.

X=$(mktemp -d)
trap 'rm -rf "$X"' EXIT

for arch in "${ARCHES[@]}"; do
	for variant in gpu static; do
		name=jobscope other=jobscope-static
		[ $variant = static ] && name=jobscope-static other=jobscope
		deb=$(deb_file $name "$arch") rpm=$(rpm_file $name "$arch")
		id="$name $arch"
		log "$id: $(basename "$deb") $(basename "$rpm")"
		if [ ! -f "$deb" ] || [ ! -f "$rpm" ]; then
			fail "$id: packages exist" "missing $deb or $rpm: run make package (VERSION=$VERSION)"
			continue
		fi
		x=$X/$name-$arch
		mkdir -p "$x/deb" "$x/ctl" "$x/rpm"
		dpkg-deb -x "$deb" "$x/deb"
		dpkg-deb -e "$deb" "$x/ctl"

		# The file list, modes and owners; repository files byte for byte.
		expected deb $variant "$arch" | sort -k2 >"$x/expected"
		listing_deb "$deb" "$x/deb/" >"$x/deb.list"
		check_same "$id deb: file list and modes" <(awk '{ print $1, $2 }' "$x/expected") \
			<(awk '{ print $1, $3 }' "$x/deb.list")
		check_eq "$id deb: every entry root-owned" "" "$(awk '$2 != "root:root"' "$x/deb.list")"
		bad=$(awk '$3 != "@"' "$x/expected" | while read -r _ path src; do
			cmp -s "$src" "$x/deb$path" || echo "$path differs from $src"
		done)
		check_eq "$id deb: files equal their sources" "" "$bad"

		# The binary: its version line, its architecture, how it links.
		bin=$x/deb/usr/bin/jobscope
		check_eq "$id: jobscope --version" "$(version_line $variant "$arch")" "$(run_bin "$arch" "$bin" --version 2>&1)"
		rbin=$x/deb/usr/bin/jobscope-report
		if [ $variant = static ]; then
			check_eq "$id: binary is static" "" "$(readelf -l "$bin" | grep -i interpreter)"
			check_eq "$id: jobscope-report is static" "" "$(readelf -l "$rbin" | grep -i interpreter)"
		else
			glibc=$(readelf -W -V "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
			check_eq "$id deb: Depends covers the binary's glibc" "libc6 (>= $glibc)" "$(dpkg-deb -f "$deb" Depends)"
			check "$id rpm: Requires covers the binary's glibc" grep -qx "libc.so.6(GLIBC_$glibc)(64bit)" <(rpm -qp --requires "$rpm")
		fi
		if [ "$arch" = "$(dpkg --print-architecture)" ]; then
			check_eq "$id: jobscope_build_info carries the same version" "$VERSION" "$(build_info_version "$bin")"
		fi
		# The man page is the one this binary writes from its flags.
		check_same "$id: man page is jobscope --help-man" <(run_bin "$arch" "$bin" --help-man 2>&1) \
			<(zcat "$x/deb/usr/share/man/man1/jobscope.1.gz")
		check_same "$id: man page is jobscope-report --help-man" <(run_bin "$arch" "$rbin" --help-man 2>&1) \
			<(zcat "$x/deb/usr/share/man/man1/jobscope-report.1.gz")
		# The exporter, privileged on every node, links no chart code.
		check_eq "$id: jobscope links no report module" "" \
			"$($GO version -m "$bin" | grep -E 'gonum|plot|font|fpdf|latex|svgo|freetype|x/image')"
		cr=$x/deb/usr/share/doc/jobscope/copyright
		check "$id: copyright names this version" grep -qx "Comment: jobscope $VERSION (revision $(git rev-parse --short HEAD)).*" "$cr"
		check "$id: copyright is in Debian's machine-readable format" /usr/bin/python3 test/package/dep5check.py "$cr"
		check_eq "$id: copyright lists every module" "" "$(modules $variant "$arch" |
			while read -r mod ver _; do grep -q "^Comment: Go module $mod $ver; " "$cr" || echo "$mod $ver"; done)"
		# rpm's License: every licence the copyright file defines, libbpf's
		# headers taken under BSD-2-Clause rather than LGPL-2.1.
		check_eq "$id rpm: License names every licence compiled in" \
			"$(awk 'prev == "" && /^License: / { print $2 } { prev = $0 }' "$cr" | grep -vx LGPL-2.1-only | sort | paste -sd' ')" \
			"$(rpm -qp --qf '%{LICENSE}' "$rpm" | sed 's/ AND /\n/g' | sort | paste -sd' ')"
		if [ $variant = static ]; then
			check_eq "$id: no NVIDIA module compiled in" "" "$(grep -i nvidia "$x/deb/usr/share/doc/jobscope/copyright")"
		fi

		# Control data and maintainer scripts.
		check_eq "$id deb: control" "$name $VERSION-1 $arch $other $other" \
			"$(dpkg-deb -f "$deb" Package Version Architecture Conflicts Replaces | sed 's/^[A-Za-z-]*: //' | paste -sd' ')"
		check_eq "$id deb: conffiles" "/etc/default/jobscope /etc/jobscope/notify.yml /etc/jobscope/report-epilog.conf /etc/jobscope/report-service.yml /etc/jobscope/report.yml" \
			"$(sort "$x/ctl/conffiles" | paste -sd' ')"
		check_eq "$id deb: maintainer scripts" "conffiles control md5sums postinst postrm prerm" "$(ls "$x/ctl" | paste -sd' ')"
		for s in postinst:postinstall prerm:preremove postrm:postremove; do
			check "$id deb: ${s%%:*} is contrib/packaging/scripts/${s#*:}.sh" cmp "$x/ctl/${s%%:*}" "contrib/packaging/scripts/${s#*:}.sh"
		done

		# The rpm: same build, same files.
		check_eq "$id rpm: name version release arch" "$name $VERSION 1 $(rpm_arch "$arch")" \
			"$(rpm -qp --qf '%{NAME} %{VERSION} %{RELEASE} %{ARCH}' "$rpm")"
		check_eq "$id rpm: conflicts" "$other" "$(rpm -qp --conflicts "$rpm")"
		check_eq "$id rpm: config files" "/etc/jobscope/notify.yml /etc/jobscope/report-epilog.conf /etc/jobscope/report-service.yml /etc/jobscope/report.yml /etc/sysconfig/jobscope" \
			"$(rpm -qcp "$rpm" | sort | paste -sd' ')"
		check_eq "$id rpm: config files are noreplace" "" \
			"$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" | awk '$2 ~ /c/ && $2 !~ /n/')"
		check_same "$id rpm: rpm -qlp is the file list" <(expected rpm $variant "$arch" | awk '{ sub("/$", "", $2); print $2 }' | sort) \
			<(rpm -qlp "$rpm" | sort)
		check_same "$id rpm: entries, modes, owners and digests equal the deb's" \
			<(grep -vF -f <(printf ' %s/ -\n' "${SYSDIRS[@]}") "$x/deb.list" | grep -v ' /etc/default/jobscope ') \
			<(listing_rpm "$rpm" | grep -v ' /etc/sysconfig/jobscope ')
		check_eq "$id rpm: /etc/sysconfig/jobscope is the Debian default file" \
			"$(sha contrib/packaging/jobscope.default)" "$(listing_rpm "$rpm" | awk '$3 == "/etc/sysconfig/jobscope" { print $4 }')"
		scriptlets "$rpm" "$x/rpm"
		check_eq "$id rpm: scriptlets" "postinstall postuninstall preuninstall" "$(ls "$x/rpm" | paste -sd' ')"
		for s in postinstall:postinstall preuninstall:preremove postuninstall:postremove; do
			f=$x/rpm/${s%%:*}
			check "$id rpm: ${s%%:*} passes sh -n and dash -n" sh -c "sh -n '$f' && dash -n '$f'"
			check_same "$id rpm: ${s%%:*} is contrib/packaging/scripts/${s#*:}.sh" "contrib/packaging/scripts/${s#*:}.sh" "$f"
		done
	done
done
